"""The Chroma client of an index store: embedded (`PersistentClient`, one per path: Chroma refuses two
settings per path; a damaged store moved aside and rebuilt, the index is a cache), or, once
`use_chroma_server(url)` was called (the App with ADR_REVIEW_CHROMA_URL: several hosts share one
index), `HttpClient` to that server, every request bounded (chroma_http.py: an outage is an
InfrastructureError). Telemetry off either way. chromadb is imported when a client is made, not with
this module: a recall on a fresh index never makes one."""

from __future__ import annotations

import hashlib
import logging
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from adr_review.adapters.chroma_http import ChromaTimeouts, timed_http_client
from adr_review.pipeline.ports import IndexStoreError, InfrastructureError

log = logging.getLogger("adr_review.index")


def collection_name_for(adr_dir: Path | str) -> str:
    """Stable per folder: a readable slug of the folder name plus a hash of its resolved path."""
    resolved = str(Path(adr_dir).resolve())
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(resolved).name).strip("-_")[:40] or "adrs"
    digest = hashlib.sha1(resolved.encode("utf-8")).hexdigest()[:12]
    return f"adrs-{slug}-{digest}"


_server: tuple[str, str | None] | None = None  # (url, token) of the Chroma server, when there is one
_timeouts = ChromaTimeouts()


def use_chroma_server(
    url: str | None, token: str | None = None, timeouts: ChromaTimeouts | None = None
) -> None:
    """From now on every index of this process lives on the Chroma server at `url` (http[s]://host:port),
    `token` sent as a bearer token; None: embedded again. Set once at start, before indexes are opened."""
    global _server, _timeouts
    _server = (url, token) if url else None
    _timeouts = timeouts or ChromaTimeouts()


def uses_server() -> bool:
    """Whether this process's indexes live on a Chroma server (use_chroma_server)."""
    return _server is not None


def chroma_client(store_dir: Path) -> Any:
    """The client of a store: the Chroma server's when one is configured, else the embedded one (always
    the same settings: Chroma refuses two settings per path). Telemetry off: the index must work on
    machines without network access."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    if _server is not None:  # timeouts and a bounded retry on every request (chroma_http.py)
        url, token = _server
        parts = urlsplit(url)
        https = parts.scheme == "https"
        return timed_http_client(
            url,
            parts.hostname or "localhost",
            parts.port or (443 if https else 8000),
            https,
            {"Authorization": f"Bearer {token}"} if token else None,
            _timeouts,
        )
    return chromadb.PersistentClient(
        path=str(Path(store_dir) / "chroma"),
        settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False),
    )


_REBUILD_KEYS = ("schema", "embedding_fingerprint", "chunking")


def existing_collection(client: Any, name: str, ef: Any, meta: dict[str, Any]) -> Any | None:
    """The collection when it exists and was made with this schema, embedding and chunking (in
    `meta`); None otherwise. Changes nothing and reads only collection metadata."""
    if name not in {c.name for c in client.list_collections()}:
        return None
    # first without our embedding function: Chroma refuses to open a collection whose persisted
    # function has another name, which is exactly the case that needs a rebuild
    old = client.get_collection(name, embedding_function=None).metadata or {}
    if any(old.get(k) != meta[k] for k in _REBUILD_KEYS):
        return None
    return client.get_collection(name, embedding_function=ef)


def open_collection(
    client: Any, name: str, ef: Any, meta: dict[str, Any], *, hnsw: dict[str, Any]
) -> tuple[Any, bool, bool]:
    """(collection, rebuilt, created): the existing one, or a new one; a collection made with another
    schema, embedding or chunking is dropped first (rebuilt)."""
    found = existing_collection(client, name, ef, meta)
    if found is not None:
        return found, False, False
    rebuilt = name in {c.name for c in client.list_collections()}
    if rebuilt:
        old = client.get_collection(name, embedding_function=None).metadata or {}
        log.info(
            "index %s: embedding or chunking changed (%s -> %s), rebuilding",
            name,
            old.get("embedding"),
            meta.get("embedding"),
        )
        client.delete_collection(name)
    collection = client.create_collection(
        name, configuration={"hnsw": dict(hnsw)}, metadata=meta, embedding_function=ef
    )
    return collection, rebuilt, True


# SQLite's words for a damaged file: Chroma cannot open the store at all, so it is rebuilt.
_CORRUPT = ("file is not a database", "database disk image is malformed", "malformed database schema")


def check_store_dir(store_dir: Path) -> None:
    """What opening the embedded store would refuse first, without opening it (and importing
    chromadb): its folder cannot be made. IndexStoreError names the folder."""
    path = Path(store_dir) / "chroma"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # said as Chroma (Rust's io::Error) said it when it opened the folder
        cause = f"{exc.strerror} (os error {exc.errno})" if exc.errno else str(exc)
        raise IndexStoreError(f"cannot open the index store {path}: {cause}") from exc


def open_chroma_client(store_dir: Path) -> tuple[Any, str | None]:
    """`chroma_client`, surviving a damaged store: the index is a cache of the ADR folder, so a store
    SQLite cannot read is moved aside (kept, not deleted) and rebuilt. Returns (client, note) where the
    note says what was recovered; any other failure is an IndexStoreError naming the folder."""
    if _server is not None:
        try:
            return chroma_client(store_dir), None
        except InfrastructureError:  # not reachable, timed out, refused our token: the run is retried
            raise
        except Exception as exc:  # not a Chroma server
            raise IndexStoreError(f"cannot use the Chroma server {_server[0]}: {exc}") from exc
    path = Path(store_dir) / "chroma"
    try:
        return chroma_client(store_dir), None
    except Exception as exc:  # Chroma raises its own InternalError (Rust) for OS and SQLite errors
        _forget_client(path)
        if not (path.is_dir() and any(word in str(exc).lower() for word in _CORRUPT)):
            raise IndexStoreError(f"cannot open the index store {path}: {exc}") from exc
        aside = path.with_name(f"chroma.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            path.rename(aside)
            client = chroma_client(store_dir)
        except Exception as again:
            _forget_client(path)
            raise IndexStoreError(
                f"the index store {path} is corrupt ({exc}) and cannot be rebuilt: {again}"
            ) from again
        note = f"the index store {path} was corrupt ({exc}); moved it to {aside.name} and rebuilt the index"
    log.warning("%s", note)
    return client, note


def _forget_client(path: Path) -> None:
    """Chroma caches a client's system per path even when starting it failed; drop that entry so
    the next open starts afresh instead of reusing a system that never started."""
    from chromadb.api.shared_system_client import SharedSystemClient

    cache = getattr(SharedSystemClient, "_identifier_to_system", None)  # private: guard against its removal
    if isinstance(cache, dict):
        cache.pop(str(path), None)
