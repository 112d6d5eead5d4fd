"""The durable state port (seed 004): checkpoints, attempts, run records, deliveries, the App's queue
and named locks, composed into one StateStore that each engine (app/adr_review/adapters/state_sqlite/,
app/adr_review/adapters/state_postgres/) implements whole; each user depends only on the part it needs."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from adr_review.core.outcomes import AdrOutcome, FindingOutcome
from adr_review.core.results import Usage
from adr_review.pipeline.queue import Accepted, Delivery, QueueItem, RunSpec

if TYPE_CHECKING:  # an annotation only: the ports do not run the ledger's code (nor does the eval need it)
    from adr_review.core.feedback import Ledger

# "stalled" is only read: files written by older versions may hold it (the queue watchdog fails a stuck
# run and flags it instead); the store's CHECK constraint keeps accepting it.
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
    stage: str  # a stage name, or "run" for run-level events (a lost race, a dead worker's attempt)
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
    updated_at: float  # last change: a checkpoint, an attempt or a state change
    finished_at: float | None


class CheckpointStore(Protocol):
    """Stage results and the audit trail of a run, keyed by run key (what `memo_for` needs).

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

    def get_result(self, result_key: str) -> dict[str, Any] | None:
        """A content-addressed stage result (any run's): the key hashes everything the stage read."""
        ...

    def put_result(self, result_key: str, stage: str, payload: Mapping[str, Any]) -> None:
        """Store it; the first writer wins (equal keys mean equal inputs)."""
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


class SpendLedger(Protocol):
    """What model calls cost, per scope (a repository) and period ("2026-12", UTC)."""

    def add_spend(self, scope: str, period: str, usd: float, calls: int = 1) -> float:
        """Add a call's cost; returns the period's total."""
        ...

    def spent(self, scope: str, period: str) -> float: ...


class RunRecords(Protocol):
    """A run's record, for a caller that drives the run itself (the Action, the CLI)."""

    def ensure_run(self, run_key: str, meta: Mapping[str, Any]) -> RunRecord:
        """Create the run (state queued) if it does not exist; return it either way."""
        ...

    def get_run(self, run_key: str) -> RunRecord | None: ...

    def set_state(self, run_key: str, state: str, error: str | None = None) -> None:
        """From any state. Terminal states also clear the lease and set finished_at."""
        ...


class RunStore(CheckpointStore, RunRecords, SpendLedger, Protocol):
    """Checkpoints plus the run record: what an inline run (the Action, the CLI) needs."""


class DeliveryLog(Protocol):
    """Webhook deliveries, deduplicated on (hook id, X-GitHub-Delivery)."""

    def accept_delivery(self, delivery: Delivery, runs: Sequence[RunSpec]) -> Accepted:
        """Store the delivery and enqueue the runs it implies in one transaction, recording the push
        order of every head a new delivery's plan names (`RunQueue.push_order`); a repeat changes
        nothing but the delivery's duplicate counter."""
        ...

    def stored_guids(self, guids: Sequence[str]) -> set[str]:
        """Which of these X-GitHub-Delivery values are stored (any hook id)."""
        ...

    def delivery_payload(self, hook_id: str | None, delivery_id: str | None) -> str | None: ...


class RunQueue(DeliveryLog, Protocol):
    """The App's durable queue. State and lease live on the run record (one source of truth).

    `claim` is the one way to take a run: a compare-and-set on the lease (free, expired or already
    ours, run queued or running) plus the attempt counter, in one transaction, recording the attempt
    of a previous holder whose lease expired (`run` / `failed` / `lease_expired: ...`). On PostgreSQL
    it maps onto `SELECT ... FOR UPDATE SKIP LOCKED` of that run's row. `finish` and `retry_later`
    act only while `owner` holds the lease of a running run, so they never overwrite a cancel or the
    watchdog's verdict. Times are the store's clock.
    """

    def enqueue(self, runs: Sequence[RunSpec]) -> int:
        """Enqueue follow-up runs (a plan's reviews); existing run keys are left as they are."""
        ...

    def due(self, limit: int = 10) -> list[QueueItem]:
        """Queued and due, or running with an expired lease; plans first, then oldest first."""
        ...

    def item(self, run_key: str) -> QueueItem | None: ...

    def claim(self, run_key: str, owner: str, ttl_s: float) -> QueueItem | None:
        """The claimed item (its attempt counter incremented), None if someone else holds it."""
        ...

    def renew(self, run_key: str, owner: str, ttl_s: float) -> bool:
        """Extend our lease (the heartbeat); False when it is not ours any more."""
        ...

    def release(self, run_key: str, owner: str) -> None:
        """Drop our lease without a state change (shutdown): another worker may take the run at once."""
        ...

    def progress(self, run_key: str) -> None:
        """A stage finished (executed or reused): the watchdog's clock restarts."""
        ...

    def finish(self, run_key: str, owner: str, state: str, error: str | None = None) -> bool:
        """Terminal state, only while `owner` holds the lease of a running run."""
        ...

    def retry_later(self, run_key: str, owner: str, error: str, delay_s: float) -> bool:
        """Back to the queue after a failed attempt, due again in delay_s."""
        ...

    def exhausted(self, run_key: str) -> bool:
        """The run's attempts are used up (a crashed worker's attempt counts too)."""
        ...

    def cancel_superseded(
        self,
        repo: str,
        pr_number: int,
        adr_path: str | None,
        head_sha: str,
        reason: str,
        keep: Collection[str] = (),
    ) -> list[str]:
        """Cancel queued or running runs of the PR (and ADR, if given) at an *older* head: one whose
        push arrived before head_sha's (`push_order`; a head with no recorded order counts as older),
        never a newer one, and not those in `keep` (the new plan's own keys: an ADR unchanged by the
        push keeps its run); a running one notices at its next stage boundary."""
        ...

    def push_order(self, repo: str, pr_number: int, head_sha: str) -> int:
        """When this head's push arrived, relative to the PR's other heads (larger: later). Recorded by
        `accept_delivery` for every new pull_request delivery (a head delivered again, e.g. after a
        force-push back, moves to the end); a head never delivered gets the next number now."""
        ...

    def cancel(self, run_key: str, reason: str) -> bool: ...

    def state(self, run_key: str) -> str | None: ...

    def watchdog(self, stall_after_s: float) -> list[str]:
        """Running runs without stage progress for stall_after_s -> failed, flagged stalled_by_watchdog
        (lease renewals are not progress; waiting in the backlog is not a stall)."""
        ...

    def health(self) -> dict[str, Any]:
        """store_ok, queue_depth, running, oldest_queued_age_s: reads only (an unauthenticated
        /healthz must not be a way to make the store write)."""
        ...


class Locks(Protocol):
    """Named leases for mutual exclusion across threads, processes and hosts sharing the store: the
    comment write of one (repo, PR, ADR), the denial reply to one user, the sync of one index. A
    lock whose holder died frees itself when its lease expires. Times are the store's clock."""

    def try_lock(self, name: str, owner: str, ttl_s: float) -> bool:
        """Take the lock if it is free, expired or already `owner`'s (then its lease is extended)."""
        ...

    def unlock(self, name: str, owner: str) -> None:
        """Release it if `owner` holds it (no effect otherwise)."""
        ...


class FeedbackLog(Protocol):
    """What reviewers did with the findings (issue 17). Every write is an idempotent upsert keyed by
    (repo, PR, ADR path[, finding id]): reading the same comment twice records nothing twice."""

    def record_ledger(self, repo: str, pr: int, path: str, ledger: Ledger) -> None:
        """The ADR's review record and the findings its comment has shown (app/adr_review/core/feedback.py)."""
        ...

    def record_ticks(
        self, repo: str, pr: int, path: str, ticks: Mapping[str, bool], actor: str | None
    ) -> list[str]:
        """Adopted or not, per shown finding id (unknown ids are ignored); the ids whose state changed.
        `actor` None: read from the comment (who ticked is not known), an earlier actor is kept."""
        ...

    def record_dismissal(self, repo: str, pr: int, finding_id: str, actor: str, reason: str) -> str | None:
        """`/adr-review dismiss`: the ADR path of that shown finding, None when the PR showed no such id."""
        ...

    def outcomes(
        self, repo: str | None, since: float, until: float
    ) -> tuple[list[AdrOutcome], list[FindingOutcome]]:
        """ADRs first reviewed, and findings first shown, within [since, until); repo None: every repo."""
        ...


class StateStore(RunStore, RunQueue, Locks, FeedbackLog, Protocol):
    """All durable state of one engine: SQLite (app/adr_review/adapters/state_sqlite/) and PostgreSQL
    (app/adr_review/adapters/state_postgres/) implement the same contract, tests/adapters/test_state_store.py.
    Each user depends on the narrowest part it needs."""

    def items(self) -> list[QueueItem]:
        """Every queue item, oldest first (operations and tests)."""
        ...

    def delivery_count(self) -> int: ...

    def close(self) -> None: ...
