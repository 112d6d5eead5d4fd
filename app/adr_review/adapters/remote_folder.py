"""An ADR folder read through the GitHubPort (the App has no checkout): list at a ref, read each blob
once per process (blobs are content-addressed, so the cache never goes stale), parse, dedupe ids."""

from __future__ import annotations

import hashlib
import logging
import posixpath
import threading
from collections import OrderedDict
from pathlib import Path

from adr_review.adapters.adr_files import dedupe_ids
from adr_review.core.adr import Adr, AdrParseError, parse_adr
from adr_review.core.adr_paths import select_adr_files
from adr_review.core.triggers import is_markdown
from adr_review.pipeline.ports import GitHubPort

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


class DiskBlobCache(BlobCache):
    """Blobs kept in the cache folder between runs: git blob ids are content hashes, so an entry never
    goes stale, and a re-index downloads only the ADRs that changed (GITHUB_TOKEN: 1,000 requests/hour)."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.downloaded = 0

    def get(self, gh: GitHubPort, repo: str, sha: str) -> bytes:
        path = self.root / sha[:2] / sha
        if path.is_file():
            data = path.read_bytes()
            if _git_blob_sha(data) == sha:
                return data
        data = gh.read_blob(repo, sha)
        self.downloaded += 1
        if _git_blob_sha(data) == sha:  # never store what does not match its name
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return data


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def load_remote_folder(
    gh: GitHubPort, repo: str, ref: str, adr_dir: str, cache: BlobCache, *, max_bytes: int = 1_000_000
) -> tuple[list[Adr], list[str]]:
    """The ADRs under adr_dir at ref (paths relative to adr_dir; adr_review.core.adr_paths decides which files
    are ADRs) and the notices for the user: "not indexed: path: reason" for a file left out, "path: note"
    for what the parser decided about one it kept (an id clash between the title and the file name)."""
    folder = adr_dir.strip("/")
    notices: list[str] = []
    adrs: list[Adr] = []
    listed = {}
    for f in gh.list_files(repo, ref, [folder]):
        rel = posixpath.relpath(f.path, folder) if folder else f.path
        if is_markdown(rel):
            listed[rel] = f
    for rel in select_adr_files(sorted(listed)):
        f = listed[rel]
        if f.size is not None and f.size > max_bytes:
            notices.append(f"not indexed: {f.path}: file too large ({f.size} bytes)")
            continue
        try:
            adr = parse_adr(rel, cache.get(gh, repo, f.blob_sha), max_bytes=max_bytes)
        except AdrParseError as exc:
            notices.append(f"not indexed: {f.path}: {exc.reason}")
            continue
        adrs.append(adr)
        notices.extend(f"{f.path}: {note}" for note in adr.notes)
    return dedupe_ids(adrs), notices
