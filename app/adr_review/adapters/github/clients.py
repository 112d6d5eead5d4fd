"""GitHubClients: how the entrypoints get GitHub clients. One object per process holds the App's JWT
client and the installation tokens (per installation and repository, shared by worker threads);
`for_run` hands out the REST client of one run, `deliveries` the App's hook deliveries for catch-up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adr_review.adapters.github.rest import DEFAULT_API_URL, USER_AGENT, GitHubAdapter
from adr_review.adapters.github.retry import Retrier, RetryPolicy
from adr_review.pipeline.ports import GitHubError

if TYPE_CHECKING:
    from adr_review.adapters.github.app import AppDeliveries, InstallationAuth


def load_private_key(*, key: str | None = None, key_path: str | Path | None = None) -> str:
    """The PEM text from the env value (literal, with `\\n` escapes tolerated) or from a file."""
    if key:
        return key.replace("\\n", "\n").strip() + "\n"
    if key_path:
        return Path(key_path).read_text(encoding="utf-8")
    raise ValueError("no GitHub App private key: set ADR_REVIEW_APP_PRIVATE_KEY or _PATH")


class GitHubClients:
    """The one GitHub client stack of a process.

    `app_id` + `private_key`: runs with an installation id get an installation token for their repository
    (APP_PERMISSIONS only). `token`: runs without one (the Action; local development of the App). The
    retry policy, sleep and clock are shared by every call, the token mint and the deliveries included.
    """

    def __init__(
        self,
        api_url: str = DEFAULT_API_URL,
        *,
        app_id: str | int | None = None,
        private_key: str | None = None,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        permissions: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        seconds_between_writes: float | None = None,
        timeout: int = 30,
    ) -> None:
        self.api_url = (api_url or DEFAULT_API_URL).rstrip("/")
        self._token = token or None
        self._policy = retry or RetryPolicy()
        self._sleep = sleep
        self._clock = clock
        self._writes = seconds_between_writes
        self._timeout = timeout
        self._retrier = Retrier(self._policy, sleep=sleep, clock=clock)
        self._lock = threading.Lock()
        self._auths: dict[tuple[int, str], InstallationAuth] = {}
        self._integration: Any = None
        self._permissions: Mapping[str, str] = {}
        self._app_login: str | None = None
        self._login_lock = threading.Lock()
        if app_id:
            if not private_key:
                raise ValueError("a GitHub App needs its private key (ADR_REVIEW_APP_PRIVATE_KEY or _PATH)")
            from adr_review.adapters.github.app import APP_PERMISSIONS, app_integration

            self._permissions = permissions if permissions is not None else APP_PERMISSIONS
            self._integration = app_integration(
                str(app_id), private_key, self.api_url, timeout=timeout, user_agent=USER_AGENT
            )

    @property
    def has_app(self) -> bool:
        return self._integration is not None

    def for_run(
        self, installation_id: int | None, repo: str, delivery_id: str | None = None
    ) -> GitHubAdapter:
        """The GitHubPort of one run: an installation token for `repo` alone when the run has an
        installation, else the static token. Every request, the token mint included, carries
        `delivery_id` in X-GitHub-Delivery."""
        common: dict[str, Any] = {
            "base_url": self.api_url,
            "policy": self._policy,
            "sleep": self._sleep,
            "clock": self._clock,
            "seconds_between_writes": self._writes,
            "timeout": self._timeout,
            "delivery_id": delivery_id,
        }
        if installation_id is not None and self._integration is not None:
            if "/" not in repo:
                raise ValueError(f"an installation token is for one repository (owner/name), not {repo!r}")
            auth = self._installation(installation_id, repo)
            return GitHubAdapter(auth=auth, identity=self.app_login, **common)
        if self._token:
            return GitHubAdapter(self._token, **common)
        raise GitHubError(
            "authenticate", "no GitHub credentials: set ADR_REVIEW_APP_ID + private key (or a token for dev)"
        )

    def app_login(self) -> str:
        """The App's bot user, `<slug>[bot]`: the author of its comments (`GET /app`, asked once)."""
        with self._login_lock:
            if self._app_login is None:
                app = self._retrier.call("read the App", lambda: self._integration.get_app())
                self._app_login = f"{app.slug}[bot]"
            return self._app_login

    def _installation(self, installation_id: int, repo: str) -> InstallationAuth:
        from adr_review.adapters.github.app import InstallationAuth

        key = (int(installation_id), repo)
        with self._lock:
            auth = self._auths.get(key)
            if auth is None:
                integration = self._integration
                auth = InstallationAuth(
                    integration.auth,
                    key[0],
                    repo,
                    self._permissions,
                    integration.requester,
                    self._retrier,
                )
                self._auths[key] = auth
            return auth

    def deliveries(self, *, per_page: int = 100) -> AppDeliveries:
        """The App's hook deliveries (app/adr_review/pipeline/server/catchup.py's DeliveriesApi)."""
        if self._integration is None:
            raise GitHubError("list hook deliveries", "no GitHub App credentials (ADR_REVIEW_APP_ID + key)")
        from adr_review.adapters.github.app import AppDeliveries

        return AppDeliveries(self._integration.requester, self._retrier, per_page=per_page)

    def close(self) -> None:
        with self._lock:
            auths = list(self._auths.values())
            self._auths.clear()
        for auth in auths:
            auth.requester.close()
        if self._integration is not None:
            self._integration.close()
