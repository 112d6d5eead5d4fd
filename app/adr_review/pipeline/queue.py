"""The App queue's value types: what the RunQueue / StateStore port (app/adr_review/pipeline/ports.py) speaks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


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
