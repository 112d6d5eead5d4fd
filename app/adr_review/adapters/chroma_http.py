"""A Chroma server client with deadlines. chromadb's HttpClient sends every request through an httpx
session without any timeout (a hung server hangs the review forever, its lease kept alive by the
heartbeat). Here every request has connect and read timeouts and a bounded retry, and making the
client (chromadb asks the server for its tenant and database) has a deadline too. What still fails is
an InfrastructureError: the run fails and the App's queue retries it with back-off (docs/app.md); it
never degrades to a review without recall. chromadb and httpx are imported when a client is made
(chroma_store.chroma_client), not with this module.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from adr_review.pipeline.ports import InfrastructureError

log = logging.getLogger("adr_review.index")

# A refused token makes the index as unusable as a server that is down: retried by the queue.
_REFUSED = (401, 403)


@dataclass(frozen=True)
class ChromaTimeouts:
    """Bounds of every request to a Chroma server: a TCP connect within `connect_s`, each read of the
    answer within `read_s`, then up to `retries` more tries `backoff_s`, 2x... apart. A request that
    still fails is an InfrastructureError: at most (retries + 1) x (connect_s + read_s) plus the
    back-off (2 x 35 s + 1 s by default) before the run fails and is retried by the queue."""

    connect_s: float = 5.0
    read_s: float = 30.0
    retries: int = 1
    backoff_s: float = 1.0


def timed_http_client(
    url: str, host: str, port: int, ssl: bool, headers: dict[str, str] | None, t: ChromaTimeouts
) -> Any:
    """chromadb.HttpClient to host:port, made within its deadline, every later request bounded."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings
    from chromadb.errors import ChromaError

    failure: BaseException | None = None
    for attempt in range(t.retries + 1):
        if attempt:
            time.sleep(t.backoff_s * 2 ** (attempt - 1))
        box: dict[str, Any] = {}

        def make(box: dict[str, Any] = box) -> None:
            try:
                box["client"] = chromadb.HttpClient(
                    host=host,
                    port=port,
                    ssl=ssl,
                    headers=headers,
                    settings=ChromaSettings(anonymized_telemetry=False),
                )
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc

        # chromadb's requests while it makes the client have no timeout: they run in a thread of their
        # own, left behind (daemon) when the deadline passes; it ends when the server answers or dies
        maker = threading.Thread(target=make, name="chroma-connect", daemon=True)
        maker.start()
        maker.join(t.connect_s + t.read_s)
        if "client" in box:
            client = box["client"]
            _bound(client._server, url, t)  # chromadb's FastAPI, whose collections share it
            return client
        failure = box.get("error") or TimeoutError(f"no answer within {t.connect_s + t.read_s:g} s")
        if isinstance(failure, ChromaError) and failure.code() not in _REFUSED and failure.code() < 500:
            raise failure  # an answer of the server (no such tenant): not an outage
        _warn("connect", "/", attempt, t, failure)
    raise InfrastructureError(
        f"Chroma server {url}: cannot connect ({t.retries + 1} attempt(s)): {type(failure).__name__}: {failure}"
    ) from failure


def _bound(server: Any, url: str, t: ChromaTimeouts) -> None:
    """Timeouts on the client's session; every request retried, then an InfrastructureError."""
    import httpx

    server._session.timeout = httpx.Timeout(t.read_s, connect=t.connect_s)
    server._make_request = _bounded(server._make_request, url, t)


def _bounded(request: Callable[..., Any], url: str, t: ChromaTimeouts) -> Callable[..., Any]:
    import httpx
    from chromadb.errors import ChromaError

    def make_request(method: str, path: str, **kwargs: Any) -> Any:
        failure: Exception | None = None
        for attempt in range(t.retries + 1):
            if attempt:
                time.sleep(t.backoff_s * 2 ** (attempt - 1))
            try:
                return request(method, path, **kwargs)
            except httpx.TransportError as exc:  # refused, reset, connect or read timeout
                failure = exc
            except ChromaError as exc:
                if exc.code() in _REFUSED:
                    raise InfrastructureError(f"Chroma server {url}: refused: {exc}") from exc
                if exc.code() < 500 and exc.code() != 429:
                    raise  # an answer (not found, invalid): the caller's to handle
                failure = exc
            except Exception as exc:  # chromadb's bare Exception(text): a 5xx without a Chroma error
                failure = exc  # body (a proxy's 502), or an answer that is not JSON
            _warn(method, path, attempt, t, failure)
        raise InfrastructureError(
            f"Chroma server {url}: {method.upper()} {path} failed {t.retries + 1} time(s): "
            f"{type(failure).__name__}: {failure}"
        ) from failure

    return make_request


def _warn(method: str, path: str, attempt: int, t: ChromaTimeouts, failure: BaseException) -> None:
    log.warning(
        "chroma_request_failed",
        extra={
            "method": method,
            "path": path,
            "attempt": attempt + 1,
            "of": t.retries + 1,
            "error": f"{type(failure).__name__}: {failure}",
        },
    )


__all__ = ["ChromaTimeouts", "timed_http_client"]
