"""The Protocols the pipeline depends on. Adapters implement them; tests fake them here, at the ports.
The durable state's port (StateStore and its parts) is state_ports.py, which a recall process
never loads."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from adr_review.core.adr import Adr
from adr_review.core.results import RetrievalResult, Usage

if TYPE_CHECKING:  # annotations only (a recall process never loads the trigger rules)
    from adr_review.core.perspectives import Perspective
    from adr_review.core.triggers import ChangedFile
    from adr_review.prompts import Prompt


@dataclass(frozen=True)
class LlmRequest:
    prompt_name: str
    system: str
    user: str  # the rendered user content
    output_schema: Mapping[str, Any]  # JSON schema the answer must satisfy
    model: str
    temperature: float | None  # configured value, always recorded; sent only if the model accepts it
    max_tokens: int
    cacheable_prefix: str | None = None  # a long block (recall's candidates) sent before `user`
    # What every model call of one review reads first (the ADR document): the adapter sends it as the
    # first system block with cache_control, so the nodes after the first read it from the cache.
    shared_prefix: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LlmResponse:
    text: str  # the raw answer text (JSON expected; parse with adr_review.core.llm_json)
    usage: Usage
    data: Any = None  # already-parsed object when the adapter used structured output
    stop_reason: str | None = None  # the API's stop_reason ("end_turn", "max_tokens", ...) when known


class LlmError(Exception):
    """A call that produced no usable answer. kind: timeout | http_error | connection | refused | empty |
    config (the provider cannot be reached as configured: no region, no credentials, a missing extra) |
    auth (the provider refused the credentials: HTTP 401 / 403)."""

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


class InfrastructureError(RuntimeError):
    """A dependency the run cannot do without failed: the state store (a database error, a lost
    connection) or the Chroma server (unreachable, timed out, 5xx). Raised by the adapters, which wrap
    their driver's error in it (the cause is chained). Never a degraded review: the use case lets it
    through, the run fails and the App's queue retries it with back-off (the Action's step fails and
    posts nothing). Degrading stays for the model's own failures (bad JSON, refusals, timeouts)."""


class StageMemo(Protocol):
    """Checkpointing seen from a stage: return the stored JSON result of `stage`, or compute, store, return it.

    `compute` returns a JSON-serialisable dict; if it raises, the attempt is recorded as failed and the
    exception propagates (nothing is stored, so a re-run computes it again). Must be thread-safe:
    the blind-spot critics call it concurrently. Stage names: "recall", "critic:devils_advocate",
    "critic:premortem", "critic:adjacent_domain", "judge", "render", "comment".

    `key`, for model stages: the hash of everything the stage reads (its rendered request). A result
    stored under that key by any run is reused: a push that changes nothing a stage reads pays nothing.
    """

    def __call__(
        self, stage: str, compute: Callable[[], dict[str, Any]], key: str | None = None
    ) -> dict[str, Any]: ...


def no_memo(stage: str, compute: Callable[[], dict[str, Any]], key: str | None = None) -> dict[str, Any]:
    """The StageMemo that stores nothing: for local one-off runs and unit tests."""
    return compute()


class RunAbandoned(BaseException):
    """The run is no longer ours to finish: cancelled, failed by the watchdog, the lease was lost, or
    re-keyed. Raised by a lifecycle's checks (the App's worker). A BaseException, like asyncio's
    CancelledError: the advisory stages' `except Exception` (a failed model call degrades to a
    fallback) never mistakes a cancellation for a failure, so a cancelled run degrades nothing."""


# --------------------------------------------------------------------------------------------------
# GitHub (implemented by app/adr_review/adapters/github.py; the Action and the App drive it)


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
    title: str = ""
    body: str = ""


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
    marker_head: str | None = None  # the PR head the marker names (markers since issue 16)
    marker_order: int | None = None  # that head's push order


class GitHubPort(Protocol):
    def default_branch(self, repo: str) -> str: ...

    def pull_request(self, repo: str, number: int) -> PullRequestInfo: ...

    def changed_files(self, repo: str, number: int) -> list[ChangedFile]:
        """Every file of the PR, all pages."""
        ...

    def pull_diff(self, repo: str, number: int) -> str:
        """The PR's unified diff as GitHub renders it (`Accept: application/vnd.github.diff`). A diff
        GitHub will not render (too large: HTTP 406 or 422) is a GitHubError with that status."""
        ...

    def read_file(self, repo: str, path: str, ref: str) -> bytes | None:
        """The file's bytes at `ref`, None when it does not exist there."""
        ...

    def list_files(self, repo: str, ref: str, folders: Sequence[str]) -> list[RepoFile]:
        """Every file below `folders` ("" = the whole repository) at `ref`."""
        ...

    def read_blob(self, repo: str, blob_sha: str) -> bytes: ...

    def find_comment(self, repo: str, number: int, adr_path: str) -> RepoComment | None:
        """Our comment for `adr_path` on the PR (by its hidden marker), if there is one. Ours: written
        by the identity of these credentials (the App's bot user, the Action token's user), nobody
        else, whatever marker they paste; the newest when there are several."""
        ...

    def pr_comments(self, repo: str, number: int) -> list[RepoComment]:
        """Every comment on the PR, oldest first, all pages (dismiss commands, for the scheduled run)."""
        ...

    def our_comments(self, repo: str, number: int) -> list[RepoComment]:
        """Our review comments on the PR (a marker, written by these credentials' identity): the newest
        per ADR path."""
        ...

    def recent_pulls(self, repo: str, since: float) -> list[int]:
        """Numbers of the PRs (open or closed) updated at or after `since` (unix time), newest first."""
        ...

    def our_comments_since(self, repo: str, since: float) -> list[RepoComment]:
        """Our review comments on any issue or PR of the repository updated at or after `since` (unix
        time), one paginated read: what the Action's monthly cap adds up."""
        ...

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> RepoComment: ...

    def create_comment(self, repo: str, number: int, body: str) -> RepoComment: ...

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None: ...

    def permission(self, repo: str, login: str) -> str:
        """admin | maintain | write | triage | read | none."""
        ...


# --------------------------------------------------------------------------------------------------
# Prompts (implemented by app/adr_review/prompts.py's PromptFiles over a prompts folder)


class PromptLibrary(Protocol):
    """The prompts and the Devil's Advocate constitution, loaded and hashed once per process."""

    @property
    def hash(self) -> str:
        """Of every file that can change a stage's result: part of every run key."""
        ...

    def prompt(self, name: str) -> Prompt:
        """Raises PromptError when the prompt's files are missing or invalid."""
        ...

    def constitution(self) -> tuple[Perspective, ...]:
        """Raises ConstitutionError when the file is missing or invalid."""
        ...


__all__ = [
    "AdrIndex",
    "GitHubError",
    "GitHubPort",
    "IndexStoreError",
    "InfrastructureError",
    "LlmError",
    "LlmPort",
    "LlmRequest",
    "LlmResponse",
    "PromptLibrary",
    "PullRequestInfo",
    "RepoComment",
    "RepoFile",
    "StageMemo",
    "SyncReport",
    "no_memo",
]
