"""GitHub App authentication: App id + private key -> JWT -> installation tokens, cached until shortly
before they expire; plus the App-level endpoints the server needs (hook deliveries, redelivery).

Own code on PyJWT rather than PyGithub's AppInstallationAuth because the server also needs the App's
`/app/hook/deliveries` endpoints (not wrapped by PyGithub) and one token cache shared by every worker
thread. The API base URL is configurable for GitHub Enterprise Server (`https://HOST/api/v3`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import jwt

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://api.github.com"
JWT_LIFETIME_S = 540  # GitHub allows at most 10 minutes; stay under it even with clock drift
JWT_BACKDATE_S = 60  # `iat` in the past protects against a server clock slightly ahead of ours
REFRESH_MARGIN_S = 300  # renew an installation token 5 minutes before it expires


class GitHubAppError(RuntimeError):
    """An App-level API call failed (status and GitHub's message kept for the log)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class InstallationToken:
    token: str
    expires_at: float  # epoch seconds


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
    def from_json(cls, d: dict[str, Any]) -> HookDelivery:
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


def load_private_key(*, key: str | None = None, key_path: str | Path | None = None) -> str:
    """The PEM text from the env value (literal, with `\\n` escapes tolerated) or from a file."""
    if key:
        return key.replace("\\n", "\n").strip() + "\n"
    if key_path:
        return Path(key_path).read_text(encoding="utf-8")
    raise GitHubAppError("no GitHub App private key: set ADR_REVIEW_APP_PRIVATE_KEY or _PATH")


class GitHubAppAuth:
    """Thread-safe App JWT + installation-token cache, and App-level REST calls."""

    def __init__(
        self,
        app_id: int | str,
        private_key: str,
        *,
        api_url: str = DEFAULT_API_URL,
        refresh_margin_s: float = REFRESH_MARGIN_S,
        clock: Callable[[], float] = time.time,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = 15.0,
    ) -> None:
        self.app_id = str(app_id)
        self._key = private_key
        self.api_url = api_url.rstrip("/")
        self.refresh_margin_s = refresh_margin_s
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[int, InstallationToken] = {}
        self._http = httpx.Client(
            base_url=self.api_url,
            timeout=timeout_s,
            transport=transport,
            headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"},
        )
        self.token_requests = 0  # how many installation tokens were minted (observability, tests)

    def close(self) -> None:
        self._http.close()

    # -- JWT and tokens -------------------------------------------------------------------------------
    def app_jwt(self) -> str:
        now = int(self._clock())
        payload = {"iat": now - JWT_BACKDATE_S, "exp": now + JWT_LIFETIME_S, "iss": self.app_id}
        return jwt.encode(payload, self._key, algorithm="RS256")

    def _app_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.app_jwt()}"}

    def installation_token(self, installation_id: int) -> str:
        """A cached token, minted again once it is within `refresh_margin_s` of expiry."""
        with self._lock:
            cached = self._tokens.get(installation_id)
            if cached and cached.expires_at - self.refresh_margin_s > self._clock():
                return cached.token
            resp = self._http.post(
                f"/app/installations/{installation_id}/access_tokens", headers=self._app_headers()
            )
            self._check(resp, f"installation token for {installation_id}")
            data = resp.json()
            tok = InstallationToken(token=data["token"], expires_at=_parse_time(data.get("expires_at")))
            self._tokens[installation_id] = tok
            self.token_requests += 1
            return tok.token

    def forget(self, installation_id: int) -> None:
        """Drop a cached token (after a 401 from the API, say)."""
        with self._lock:
            self._tokens.pop(installation_id, None)

    # -- hook deliveries (catch-up) -------------------------------------------------------------------
    def iter_deliveries(self, *, per_page: int = 100, max_pages: int = 10) -> Iterator[HookDelivery]:
        """Newest first, following the `Link: rel="next"` cursor."""
        url: str | None = f"/app/hook/deliveries?per_page={per_page}"
        pages = 0
        while url and pages < max_pages:
            resp = self._http.get(url, headers=self._app_headers())
            self._check(resp, "list hook deliveries")
            for row in resp.json():
                yield HookDelivery.from_json(row)
            pages += 1
            nxt = resp.links.get("next", {}).get("url")
            url = nxt or None

    def redeliver(self, delivery_id: int) -> None:
        resp = self._http.post(f"/app/hook/deliveries/{delivery_id}/attempts", headers=self._app_headers())
        self._check(resp, f"redeliver {delivery_id}")

    def app_info(self) -> dict[str, Any]:
        resp = self._http.get("/app", headers=self._app_headers())
        self._check(resp, "get app")
        data: dict[str, Any] = resp.json()
        return data

    @staticmethod
    def _check(resp: httpx.Response, what: str) -> None:
        if resp.status_code >= 400:
            try:
                msg = resp.json().get("message", resp.text)
            except ValueError:
                msg = resp.text
            raise GitHubAppError(f"{what}: HTTP {resp.status_code}: {msg}", resp.status_code)


def _parse_time(value: str | None) -> float:
    if not value:
        return time.time() + 3600.0
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
