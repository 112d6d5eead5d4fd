"""The GitHub App side of the stack, on PyGithub's own App auth: the JWT (`github.Auth.AppAuth`),
installation tokens (`github.Auth.AppInstallationAuth`: cached, minted again shortly before they
expire), the delivery header on every request of a run, and the App's hook deliveries for catch-up.

Every request here goes through a PyGithub `Requester` and the one `Retrier`; nothing signs a JWT or
speaks HTTP by hand.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from github.Auth import AppAuth, AppInstallationAuth, Auth
from github.GithubIntegration import GithubIntegration
from github.InstallationAuthorization import InstallationAuthorization
from github.Requester import Requester

from adr_review.adapters.github.retry import Retrier

log = logging.getLogger(__name__)

API_VERSION = "2022-11-28"

# What the GitHubPort calls need and no more; the App is registered with more (Pull requests and Issues
# read and write, docs/app.md), and a token asks for this subset only.
APP_PERMISSIONS: Mapping[str, str] = {
    "metadata": "read",  # GET /repos/{o}/{r}, GET .../collaborators/{user}/permission
    "contents": "read",  # contents, git trees and blobs: the ADR files, the repo config
    "pull_requests": "read",  # GET .../pulls/{n} and .../pulls/{n}/files
    "issues": "write",  # list, create and edit the PR comment (an issue comment); the 👀 reaction
}


def app_integration(app_id: str, private_key: str, api_url: str, *, timeout: int, user_agent: str) -> Any:
    """PyGithub's App-level client (JWT auth). PyGithub's own retry and request spacing are off: the
    Retrier is the one policy, and the mint must not wait a second behind another App's POST."""
    return GithubIntegration(
        auth=AppAuth(app_id, private_key),
        base_url=api_url,
        timeout=timeout,
        user_agent=user_agent,
        retry=None,
        seconds_between_requests=None,
        seconds_between_writes=None,
        lazy=True,
        api_version=API_VERSION,
    )


class InstallationAuth(AppInstallationAuth):
    """An installation token for one repository with APP_PERMISSIONS, shared by every run on that repo.

    PyGithub's AppInstallationAuth keeps the token and mints a new one when it is about to expire; this
    subclass adds what it lacks: the `repositories` restriction (GithubIntegration.get_access_token sends
    permissions only), the retry policy on the mint, a lock (worker threads share the token), `forget()`
    for a token GitHub refused, and the delivery id on the mint of a delivery's run.
    """

    def __init__(
        self,
        app_auth: AppAuth,
        installation_id: int,
        repo: str,
        permissions: Mapping[str, str],
        requester: Requester,
        retrier: Retrier,
    ) -> None:
        self.repo = repo
        self._retrier = retrier
        self._lock = threading.Lock()
        self._stale = False
        self._delivery_id: str | None = None
        self.mints = 0  # tokens minted by this auth (observability, tests)
        super().__init__(app_auth, installation_id, dict(permissions), requester)

    def token_for(self, delivery_id: str | None) -> str:
        """The cached token, minted first when there is none, it is about to expire or was forgotten."""
        with self._lock:
            self._delivery_id = delivery_id
            try:
                return str(super().token)
            finally:
                self._delivery_id = None

    @property
    def token(self) -> str:
        return self.token_for(None)

    def forget(self) -> None:
        """GitHub refused the token (401): the next request mints a new one."""
        with self._lock:
            self._stale = True

    @property
    def _is_expired(self) -> bool:
        return self._stale or bool(super()._is_expired)

    def _get_installation_authorization(self) -> InstallationAuthorization:
        # One repository (by name, within the installation's account) and only the permissions we use.
        body: dict[str, Any] = {
            "permissions": dict(self.token_permissions or {}),
            "repositories": [self.repo.rsplit("/", 1)[-1]],
        }
        headers = {"X-GitHub-Delivery": self._delivery_id} if self._delivery_id else {}
        url = f"/app/installations/{self.installation_id}/access_tokens"

        def mint() -> InstallationAuthorization:
            answer_headers, data = self.requester.requestJsonAndCheck(
                "POST", url, headers=dict(headers), input=body
            )
            return InstallationAuthorization(
                requester=self.requester, headers=answer_headers, attributes=data
            )

        what = self.repo or f"installation {self.installation_id}"
        authorization = self._retrier.call(f"mint an installation token for {what}", mint)
        self._stale = False
        self.mints += 1
        log.info("installation_token_minted", extra={"installation": self.installation_id, "repo": self.repo})
        return authorization


class RunAuth(Auth):
    """What every request of one run carries: its credentials and, for a webhook delivery, the delivery
    id in `X-GitHub-Delivery` (as probot does), so GitHub's side and our logs meet on one id."""

    def __init__(self, inner: Auth | None, delivery_id: str | None) -> None:
        self.inner = inner
        self.delivery_id = delivery_id

    @property
    def token_type(self) -> str:
        return self.inner.token_type if self.inner is not None else ""

    @property
    def token(self) -> str:
        return self.inner.token if self.inner is not None else ""

    def authentication(self, headers: dict[str, Any]) -> None:
        if isinstance(self.inner, InstallationAuth):
            headers["Authorization"] = f"token {self.inner.token_for(self.delivery_id)}"
        elif self.inner is not None:
            self.inner.authentication(headers)
        if self.delivery_id:
            headers["X-GitHub-Delivery"] = self.delivery_id

    def mask_authentication(self, headers: dict[str, Any]) -> None:
        if self.inner is not None:
            self.inner.mask_authentication(headers)


# -- hook deliveries (catch-up) -------------------------------------------------------------------------


@dataclass(frozen=True)
class HookDelivery:
    """One row of `GET /app/hook/deliveries`."""

    id: int
    guid: str  # the X-GitHub-Delivery value
    delivered_at: str
    redelivery: bool
    status: str
    status_code: int
    event: str
    action: str | None
    installation_id: int | None

    @property
    def ok(self) -> bool:
        return 200 <= self.status_code < 300

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> HookDelivery:
        return cls(
            id=int(d["id"]),
            guid=str(d.get("guid") or ""),
            delivered_at=str(d.get("delivered_at") or ""),
            redelivery=bool(d.get("redelivery")),
            status=str(d.get("status") or ""),
            status_code=int(d.get("status_code") or 0),
            event=str(d.get("event") or ""),
            action=d.get("action"),
            installation_id=d.get("installation_id"),
        )


class AppDeliveries:
    """The DeliveriesApi of app/adr_review/pipeline/server/catchup.py over the App's JWT requester (PyGithub wraps the
    hook deliveries of repositories and organisations, not the App's own)."""

    def __init__(self, requester: Requester, retrier: Retrier, *, per_page: int = 100, max_pages: int = 10):
        self._requester = requester
        self._retrier = retrier
        self._per_page = per_page
        self._max_pages = max_pages

    def iter_deliveries(self) -> Iterator[HookDelivery]:
        """Newest first, following the `Link: rel="next"` cursor; each page under the retry policy."""
        from requests.utils import parse_header_links

        url: str | None = f"/app/hook/deliveries?per_page={self._per_page}"
        pages = 0
        while url and pages < self._max_pages:
            get_page = functools.partial(self._requester.requestJsonAndCheck, "GET", url)
            headers, rows = self._retrier.call("list hook deliveries", get_page)
            for row in rows or []:
                yield HookDelivery.from_json(row)
            pages += 1
            links = parse_header_links(str(headers.get("link") or ""))
            url = next((link["url"] for link in links if link.get("rel") == "next"), None)

    def redeliver(self, delivery_id: int) -> None:
        self._retrier.call(
            f"redeliver {delivery_id}",
            lambda: self._requester.requestJsonAndCheck(
                "POST", f"/app/hook/deliveries/{delivery_id}/attempts"
            ),
        )
