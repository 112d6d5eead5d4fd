"""The embedded Chroma client of an index store: one client per path (Chroma refuses two settings
per path), telemetry off, and a damaged store moved aside and rebuilt (the index is a cache)."""

from __future__ import annotations

import hashlib
import logging
import re
import time
from pathlib import Path
from typing import Any

import chromadb
from chromadb.config import Settings as ChromaSettings

from app.pipeline.ports import IndexStoreError

log = logging.getLogger("adr_review.index")


def collection_name_for(adr_dir: Path | str) -> str:
    """Stable per folder: a readable slug of the folder name plus a hash of its resolved path."""
    resolved = str(Path(adr_dir).resolve())
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(resolved).name).strip("-_")[:40] or "adrs"
    digest = hashlib.sha1(resolved.encode("utf-8")).hexdigest()[:12]
    return f"adrs-{slug}-{digest}"


def chroma_client(store_dir: Path) -> Any:
    """The embedded client of a store (always the same settings: Chroma refuses two settings per path).
    Telemetry off: the index must work on machines without network access."""
    return chromadb.PersistentClient(
        path=str(Path(store_dir) / "chroma"),
        settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False),
    )


# SQLite's words for a damaged file: Chroma cannot open the store at all, so it is rebuilt.
_CORRUPT = ("file is not a database", "database disk image is malformed", "malformed database schema")


def open_chroma_client(store_dir: Path) -> tuple[Any, str | None]:
    """`chroma_client`, surviving a damaged store: the index is a cache of the ADR folder, so a store
    SQLite cannot read is moved aside (kept, not deleted) and rebuilt. Returns (client, note) where the
    note says what was recovered; any other failure is an IndexStoreError naming the folder."""
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
