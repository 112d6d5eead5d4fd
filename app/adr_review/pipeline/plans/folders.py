"""The past ADRs a review reads: the ADR folder at the PR's base commit and its index.

One step for the Action and the App: list and parse the folder through the AdrSource, open the index
of that (repo, folder) and sync it. The index is opened and synced on first search only, so a run that
does not recall (`/adr-review blind-spots`, recall disabled) never pays for it; an index that cannot
be opened or synced makes recall degrade with the reason instead of failing the review, except when
its server is unavailable (InfrastructureError): then the run fails and is retried, and the next
search tries again.
"""

from __future__ import annotations

import logging
import posixpath
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from adr_review.config import RepoConfig
from adr_review.core.adr import Adr
from adr_review.core.results import RetrievalResult
from adr_review.pipeline.ports import AdrIndex, GitHubPort, InfrastructureError, SyncReport

log = logging.getLogger(__name__)

# (gh, repo, ref, adr_dir) -> (parsed ADRs with folder-relative paths, notices for the user:
# "not indexed: path: reason" for a file left out, "path: note" for what the parser decided)
LoadFolder = Callable[[GitHubPort, str, str, str], tuple[list[Adr], list[str]]]
# (repo, adr_dir, config) -> an opened index of that folder; syncing is the caller's
OpenIndex = Callable[[str, str, RepoConfig], AdrIndex]
# (level "warning" | "error" | "info", message, repo-relative file or None): where the user looks
Notify = Callable[[str, str, "str | None"], None]


def log_notice(level: str, message: str, path: str | None = None) -> None:
    log.log(logging.ERROR if level == "error" else logging.INFO, message, extra={"path": path})


class UnavailableIndex:
    """Stands in for an index that could not be opened: recall reports the reason instead of crashing."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def sync(self, adrs: Sequence[Adr]) -> SyncReport:
        return SyncReport(0, 0, 0, 0, (self.reason,), 0.0, "unavailable")

    def search(
        self,
        query: str,
        *,
        top_n: int = 20,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
    ) -> RetrievalResult:
        raise RuntimeError(self.reason)


class LazyIndex:
    """Opens and syncs the folder's index at the first search (see the module docstring)."""

    def __init__(
        self,
        open_index: Callable[[], AdrIndex],
        folder: Sequence[Adr],
        *,
        label: str,
        on_synced: Callable[[SyncReport], None] | None = None,
        notify: Notify = log_notice,
    ) -> None:
        self._open = open_index
        self._folder = folder
        self._label = label
        self._on_synced = on_synced
        self._notify = notify
        self._index: AdrIndex | None = None
        self._report: SyncReport | None = None
        self._lock = threading.Lock()

    def _get(self) -> AdrIndex:
        with self._lock:
            if self._index is None:
                try:
                    index = self._open()
                    report = index.sync(self._folder)
                except InfrastructureError:
                    raise  # the Chroma server or the store is down: not remembered, the retry tries again
                except Exception as exc:
                    log.exception("index_unavailable", extra={"folder": self._label})
                    reason = f"the ADR index could not be built ({type(exc).__name__}: {exc})"
                    self._notify("warning", f"{self._label}: {reason}", None)
                    self._index = UnavailableIndex(reason)
                else:
                    self._index, self._report = index, report
                    if self._on_synced is not None:
                        self._on_synced(report)
            return self._index

    def sync(self, adrs: Sequence[Adr]) -> SyncReport:
        """Sync now (the scheduled re-index); a later search uses the synced index."""
        with self._lock:
            self._folder, self._index, self._report = adrs, None, None
        index = self._get()
        return self._report or index.sync(adrs)

    def search(
        self,
        query: str,
        *,
        top_n: int = 20,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
    ) -> RetrievalResult:
        return self._get().search(query, top_n=top_n, exclude_paths=exclude_paths, pool=pool)


@dataclass
class FolderCache:
    """One run's folders: every ADR of a PR in the same folder shares one listing and one index."""

    load_folder: LoadFolder
    open_index: OpenIndex
    notify: Notify = log_notice
    on_synced: Callable[[str, str, SyncReport], None] | None = None  # (adr_dir, ref, report)

    def __post_init__(self) -> None:
        self._folders: dict[tuple[str, str, str], tuple[list[Adr], AdrIndex]] = {}
        self._lock = threading.Lock()

    def get(
        self, gh: GitHubPort, repo: str, ref: str, adr_dir: str, config: RepoConfig
    ) -> tuple[list[Adr], AdrIndex]:
        key = (repo, ref, adr_dir)
        with self._lock:
            if key in self._folders:
                return self._folders[key]
        folder, errors = self.load_folder(gh, repo, ref, adr_dir)
        for err in errors[:20]:
            self.notify("warning", err, None)
        if len(errors) > 20:
            self.notify("warning", f"{len(errors) - 20} more notice(s) about the ADR folder", None)

        def synced(report: SyncReport) -> None:
            if self.on_synced is not None:
                self.on_synced(adr_dir, ref, report)

        index = LazyIndex(
            lambda: self.open_index(repo, adr_dir, config),
            folder,
            label=adr_dir or "/",
            on_synced=synced,
            notify=self.notify,
        )
        with self._lock:
            return self._folders.setdefault(key, (folder, index))

    def synced_now(self, gh: GitHubPort, repo: str, ref: str, adr_dir: str, config: RepoConfig) -> list[Adr]:
        """The folder with its index brought up to date now (the scheduled re-index)."""
        folder, index = self.get(gh, repo, ref, adr_dir, config)
        index.sync(folder)
        return folder


def reindex(
    gh: GitHubPort, repo: str, ref: str, config: RepoConfig, folders: FolderCache
) -> list[tuple[str, int]]:
    """The scheduled re-index: every ADR folder under the globs at `ref`, synced; (folder, ADR count)."""
    from adr_review.core.adr_paths import is_adr_candidate
    from adr_review.core.triggers import adr_glob_roots, select_adrs

    listed = gh.list_files(repo, ref, adr_glob_roots(config.adr_paths))
    paths = select_adrs([f.path for f in listed], config.adr_paths, accept=is_adr_candidate)
    dirs = sorted({posixpath.dirname(p) for p in paths})
    return [(d, len(folders.synced_now(gh, repo, ref, d, config))) for d in dirs]
