"""The Protocols the pipeline depends on. Adapters implement them; tests fake them here, at the ports."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.core.adr import Adr
from app.core.results import RetrievalResult, Usage
from app.core.triggers import ChangedFile


@dataclass(frozen=True)
class LlmRequest:
    prompt_name: str
    system: str
    user: str  # the rendered user content
    output_schema: Mapping[str, Any]  # JSON schema the answer must satisfy
    model: str
    temperature: float | None  # configured value, always recorded; sent only if the model accepts it
    max_tokens: int
    cacheable_prefix: str | None = (
        None  # a long, stable block (candidates) sent with cache_control before `user`
    )
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LlmResponse:
    text: str  # the raw answer text (JSON expected; parse with app.core.llm_json)
    usage: Usage
    data: Any = None  # already-parsed object when the adapter used structured output


class LlmError(Exception):
    """A call that produced no usable answer. kind: timeout | http_error | connection | refused | empty."""

    def __init__(self, kind: str, message: str, usage: Usage | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.usage = usage or Usage()


class LlmPort(Protocol):
    def complete(self, request: LlmRequest) -> LlmResponse: ...


@dataclass(frozen=True)
class SyncReport:
    added: int
    updated: int
    removed: int
    unchanged: int
    errors: tuple[str, ...]  # per-file parse errors, "path: reason"
    seconds: float
    embedding: str
    rebuilt: bool = False


class AdrIndex(Protocol):
    def sync(self, adrs: Sequence[Adr]) -> SyncReport: ...

    def search(
        self,
        query: str,
        *,
        top_n: int = 20,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
    ) -> RetrievalResult: ...


class IndexStoreError(RuntimeError):
    """The index's store folder cannot be used (not a folder, not writable, unreadable): the message
    names the folder and the cause. A corrupt store is not this error: the adapter rebuilds it."""


class StageMemo(Protocol):
    """Checkpointing seen from a stage: return the stored JSON result of `stage`, or compute, store, return it.

    `compute` returns a JSON-serialisable dict; if it raises, the attempt is recorded as failed and the
    exception propagates (nothing is stored, so a re-run computes it again). Must be thread-safe:
    the blind-spot critics call it concurrently. Stage names: "recall", "critic:devils_advocate",
    "critic:premortem", "critic:adjacent_domain", "judge", "render", "comment".
    """

    def __call__(self, stage: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]: ...


def no_memo(stage: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The StageMemo that stores nothing: for local one-off runs and unit tests."""
    return compute()


# --- Durable runs (seed 004): checkpoints, attempts, leases -------------------------------------------

RUN_STATES = ("queued", "running", "completed", "failed", "cancelled", "stalled")
TERMINAL_STATES = frozenset({"completed", "failed", "cancelled", "stalled"})
ATTEMPT_OUTCOMES = ("executed", "skipped-checkpoint", "skipped-locked", "failed")


@dataclass(frozen=True)
class AttemptInfo:
    """What an executed attempt cost; `put` records it atomically with the checkpoint it produced."""

    duration_s: float = 0.0
    usage: Usage = field(default_factory=Usage)
    owner: str | None = None
    attempt: int | None = None  # None: the store assigns the next number for (run, stage)


@dataclass(frozen=True)
class AttemptRecord:
    run_key: str
    stage: str  # a stage name, or "run" for run-level events (a lease that was not granted)
    attempt: int  # 1, 2, ... per (run_key, stage)
    outcome: str  # one of ATTEMPT_OUTCOMES
    duration_s: float
    usage: Usage
    error: str | None
    authoritative: bool  # this attempt produced the stored checkpoint of its stage
    owner: str | None
    at: float  # unix time


@dataclass(frozen=True)
class RunRecord:
    run_key: str
    state: str  # one of RUN_STATES
    meta: Mapping[str, Any]
    error: str | None
    lease_owner: str | None
    lease_expires_at: float | None
    created_at: float
    updated_at: float  # last progress: a checkpoint, an attempt or a state change (stall detection)
    finished_at: float | None


class CheckpointStore(Protocol):
    """Stage results and the audit trail of a run, keyed by run key.

    A checkpoint is written once: the first `put` for (run, stage) wins and its attempt is marked
    authoritative; a later `put` (a second worker that raced) records a non-authoritative attempt and
    returns False, and the caller uses `get` instead. Implementations must be safe to share between
    threads (the critics run concurrently) and, for durable stores, between processes.
    """

    def get(self, run_key: str, stage: str) -> dict[str, Any] | None: ...

    def put(
        self, run_key: str, stage: str, seq: int | None, payload: Mapping[str, Any], info: AttemptInfo
    ) -> bool:
        """Store the checkpoint and record an `executed` attempt in one transaction.

        seq None: next sequence number of the run. Returns True when this payload became the checkpoint.
        """
        ...

    def record_attempt(
        self,
        run_key: str,
        stage: str,
        attempt: int | None,
        outcome: str,
        duration_s: float = 0.0,
        usage: Usage | None = None,
        error: str | None = None,
        *,
        owner: str | None = None,
    ) -> AttemptRecord: ...

    def attempts(self, run_key: str) -> list[AttemptRecord]: ...

    def checkpoints(self, run_key: str) -> list[tuple[int, str]]:
        """(seq, stage) of the stored checkpoints, in seq order."""
        ...

    # run level
    def ensure_run(self, run_key: str, meta: Mapping[str, Any]) -> RunRecord:
        """Create the run (state queued) if it does not exist; return it either way."""
        ...

    def get_run(self, run_key: str) -> RunRecord | None: ...

    def set_state(self, run_key: str, state: str, error: str | None = None) -> None:
        """Terminal states also clear the lease and set finished_at."""
        ...

    # leases: one worker per run
    def claim(self, run_key: str, owner: str, ttl_s: float) -> bool:
        """Compare-and-set: take the lease if it is free, expired or already ours, and the run is not
        terminal; the run becomes `running`. False: someone else holds it (record `skipped-locked`)."""
        ...

    def renew(self, run_key: str, owner: str, ttl_s: float) -> bool: ...

    def release(self, run_key: str, owner: str) -> None: ...

    def mark_stalled(self, no_progress_s: float) -> list[str]:
        """Watchdog: runs queued/running without progress for no_progress_s become `stalled`."""
        ...


# --------------------------------------------------------------------------------------------------
# GitHub (implemented by app/adapters/github.py; the Action and the App drive it)


class GitHubError(Exception):
    """A GitHub call that failed for good: not retryable, or still failing when the retry budget ran out."""

    def __init__(self, operation: str, message: str, status: int | None = None) -> None:
        http = f" (HTTP {status})" if status else ""
        super().__init__(f"GitHub {operation} failed{http}: {message}")
        self.operation = operation
        self.message = message
        self.status = status


@dataclass(frozen=True)
class PullRequestInfo:
    repo: str
    number: int
    head_sha: str
    base_sha: str
    base_ref: str
    head_repo: str | None  # None when the fork was deleted
    draft: bool
    state: str
    html_url: str = ""


@dataclass(frozen=True)
class RepoFile:
    path: str  # repo-relative
    blob_sha: str  # git blob id: equal ids mean equal bytes
    size: int | None = None


@dataclass(frozen=True)
class RepoComment:
    id: int
    body: str
    html_url: str
    author: str
    author_type: str  # "User" | "Bot"
    author_association: str
    marker_path: str | None = None  # from the hidden adr-review marker, when the body has one
    marker_key: str | None = None


class GitHubPort(Protocol):
    def default_branch(self, repo: str) -> str: ...

    def pull_request(self, repo: str, number: int) -> PullRequestInfo: ...

    def changed_files(self, repo: str, number: int) -> list[ChangedFile]:
        """Every file of the PR, all pages."""
        ...

    def read_file(self, repo: str, path: str, ref: str) -> bytes | None:
        """The file's bytes at `ref`, None when it does not exist there."""
        ...

    def list_files(self, repo: str, ref: str, folders: Sequence[str]) -> list[RepoFile]:
        """Every file below `folders` ("" = the whole repository) at `ref`."""
        ...

    def read_blob(self, repo: str, blob_sha: str) -> bytes: ...

    def find_comment(self, repo: str, number: int, adr_path: str) -> RepoComment | None:
        """This tool's comment for `adr_path` on the PR (by its hidden marker), if there is one."""
        ...

    def upsert_comment(self, repo: str, number: int, adr_path: str, body: str) -> tuple[RepoComment, bool]:
        """Edit this tool's comment for `adr_path`, or create it when there is none; True when created."""
        ...

    def create_comment(self, repo: str, number: int, body: str) -> RepoComment: ...

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None: ...

    def permission(self, repo: str, login: str) -> str:
        """admin | maintain | write | triage | read | none."""
        ...
