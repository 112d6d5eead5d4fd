"""The durable run queue as the pipeline sees it: value types and the RunQueue port.

app/adapters/queue_store.py implements it on SQLite (next to the checkpoint store); a Postgres
implementation would claim with `SELECT ... FOR UPDATE SKIP LOCKED` (docs/app.md, "Scale-out").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Delivery:
    hook_id: str
    delivery_id: str  # X-GitHub-Delivery (GitHub's guid; a redelivery keeps it)
    event: str
    action: str | None
    installation_id: int | None
    repo: str | None
    body_sha256: str
    payload: str  # the verified raw body, decoded


@dataclass(frozen=True)
class RunSpec:
    """One run to enqueue (idempotent on run_key)."""

    run_key: str
    kind: str  # plan | review
    repo: str
    pr_number: int
    installation_id: int | None = None
    adr_path: str = ""
    head_sha: str = ""
    spec: Mapping[str, Any] = field(default_factory=dict)
    parent_key: str | None = None
    max_attempts: int = 3


@dataclass(frozen=True)
class Accepted:
    stored: bool  # False: this (hook id, delivery id) was already stored (a redelivery / duplicate)
    run_keys: tuple[str, ...]  # the runs this delivery implies (first storage's, for a duplicate)
    new_runs: int  # how many of them were new rows


@dataclass(frozen=True)
class QueueItem:
    run_key: str
    kind: str
    state: str
    installation_id: int | None
    repo: str
    pr_number: int
    adr_path: str
    head_sha: str
    spec: Mapping[str, Any]
    parent_key: str | None
    hook_id: str | None
    delivery_id: str | None
    enqueued_at: float
    attempts: int
    max_attempts: int
    lease_owner: str | None
    lease_expires_at: float | None
    progress_at: float | None
    last_error: str | None
    stalled_by_watchdog: bool
    cancel_reason: str | None
    error: str | None


class RunQueue(Protocol):
    """Deliveries and runs. State and lease live on the checkpoint store's run rows."""

    def accept_delivery(self, delivery: Delivery, runs: Sequence[RunSpec]) -> Accepted: ...

    def enqueue(self, runs: Sequence[RunSpec]) -> int: ...

    def stored_guids(self, guids: Sequence[str]) -> set[str]: ...

    def due(self, limit: int = 10) -> list[QueueItem]: ...

    def get(self, run_key: str) -> QueueItem | None: ...

    def claim(self, run_key: str, owner: str, ttl_s: float) -> QueueItem | None: ...

    def progress(self, run_key: str) -> None: ...

    def finish(self, run_key: str, owner: str, state: str, error: str | None = None) -> bool: ...

    def retry_later(self, run_key: str, owner: str, error: str, delay_s: float) -> bool: ...

    def exhausted(self, run_key: str) -> bool: ...

    def cancel_superseded(
        self, repo: str, pr_number: int, adr_path: str | None, head_sha: str, reason: str
    ) -> list[str]: ...

    def cancel(self, run_key: str, reason: str) -> bool: ...

    def state(self, run_key: str) -> str | None: ...

    def watchdog(self, stall_after_s: float) -> list[str]: ...

    def health(self) -> dict[str, Any]: ...

    def delivery_payload(self, hook_id: str | None, delivery_id: str | None) -> str | None: ...
