"""An ADR folder read through the GitHubPort (the App has no checkout): list at a ref, read each blob
once per process (blobs are content-addressed, so the cache never goes stale), parse, dedupe ids."""

from __future__ import annotations

import logging
import posixpath
import threading
from collections import OrderedDict

from app.adapters.adr_files import dedupe_ids, is_adr_candidate
from app.core.adr import Adr, AdrParseError, parse_adr
from app.core.triggers import is_markdown
from app.pipeline.ports import GitHubPort

log = logging.getLogger(__name__)


class BlobCache:
    """(repo, blob sha) -> bytes, bounded by total size."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._data: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._size = 0

    def get(self, gh: GitHubPort, repo: str, sha: str) -> bytes:
        key = (repo, sha)
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        data = gh.read_blob(repo, sha)
        with self._lock:
            if key not in self._data:
                self._data[key] = data
                self._size += len(data)
            while self._size > self.max_bytes and self._data:
                _, old = self._data.popitem(last=False)
                self._size -= len(old)
        return data


def load_remote_folder(
    gh: GitHubPort, repo: str, ref: str, adr_dir: str, cache: BlobCache, *, max_bytes: int = 1_000_000
) -> tuple[list[Adr], list[str]]:
    """The ADRs directly under adr_dir (and below it) at ref, paths relative to adr_dir; parse errors."""
    folder = adr_dir.strip("/")
    errors: list[str] = []
    adrs: list[Adr] = []
    for f in sorted(gh.list_files(repo, ref, [folder]), key=lambda f: f.path):
        rel = posixpath.relpath(f.path, folder) if folder else f.path
        if not is_markdown(rel) or not is_adr_candidate(rel):
            continue
        if f.size is not None and f.size > max_bytes:
            errors.append(f"{f.path}: file too large ({f.size} bytes)")
            continue
        try:
            adrs.append(parse_adr(rel, cache.get(gh, repo, f.blob_sha), max_bytes=max_bytes))
        except AdrParseError as exc:
            errors.append(f"{f.path}: {exc.reason}")
    return dedupe_ids(adrs), errors
