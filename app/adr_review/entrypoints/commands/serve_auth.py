"""What `adr-review serve` needs from GitHub before it starts: the App's credentials (named when
missing, so the server refuses to start instead of queueing work that can only fail) and the one
client stack built from them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adr_review.adapters.github import GitHubClients
    from adr_review.config import AppSettings


def static_token() -> str | None:
    """A personal token for local development without an App (docs/app.md, "Local development")."""
    return os.environ.get("ADR_REVIEW_GITHUB_TOKEN") or os.environ.get("GITHUB_TOKEN") or None


def missing_credentials(settings: AppSettings, *, web: bool, insecure_no_secret: bool) -> str | None:
    """What the App cannot run without, named, or None. The App's id and private key (every run reads
    and comments through an installation token, and catch-up lists the App's deliveries), and for a
    web process the webhook secret. Local development only: a static token instead of the id and key,
    --insecure-no-secret instead of the secret."""
    missing = []
    has_key = bool(settings.app_private_key or settings.app_private_key_path)
    if not (settings.app_id and has_key) and (settings.app_id or has_key or not static_token()):
        if not settings.app_id:
            missing.append("ADR_REVIEW_APP_ID")
        if not has_key:
            missing.append("ADR_REVIEW_APP_PRIVATE_KEY_PATH (or ADR_REVIEW_APP_PRIVATE_KEY)")
    if web and not settings.webhook_secret and not insecure_no_secret:
        missing.append("ADR_REVIEW_WEBHOOK_SECRET")
    if not missing:
        return None
    dev = []
    if any(m.startswith("ADR_REVIEW_APP_") for m in missing):
        dev.append("ADR_REVIEW_GITHUB_TOKEN instead of the App's id and key")
    if "ADR_REVIEW_WEBHOOK_SECRET" in missing:
        dev.append("--insecure-no-secret instead of the webhook secret")
    hint = f" For local development only: {'; '.join(dev)}." if dev else ""
    return f"the GitHub App's credentials are missing: {', '.join(missing)}.{hint}"


def app_auth(settings: AppSettings) -> GitHubClients:
    """The process's one GitHub client stack (app/adr_review/adapters/github/): the App's installation tokens when
    ADR_REVIEW_APP_ID is set, a static token (ADR_REVIEW_GITHUB_TOKEN / GITHUB_TOKEN) for runs without an
    installation (local development)."""
    from adr_review.adapters.github import GitHubClients, load_private_key

    key = None
    if settings.app_id:
        key = load_private_key(key=settings.app_private_key, key_path=settings.app_private_key_path)
    return GitHubClients(
        settings.github_api_url,
        app_id=settings.app_id or None,
        private_key=key,
        token=static_token(),
    )
