"""What the two StateStore engines (state_sqlite/, state_postgres/) share, so the contract has one
spelling: payload JSON, the state and outcome checks, the one state-transition statement, and the
mapping of a row (sqlite3.Row or a psycopg dict row: both index by column name) to the port's records.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from adr_review.core.results import Usage
from adr_review.pipeline.queue import QueueItem
from adr_review.pipeline.state_ports import (
    ATTEMPT_OUTCOMES,
    RUN_STATES,
    TERMINAL_STATES,
    AttemptRecord,
    RunRecord,
)

ACTIVE = ("queued", "running")
TERMINAL_SQL = ",".join(f"'{s}'" for s in sorted(TERMINAL_STATES))


class StoreError(RuntimeError):
    """The store cannot be used (unreadable, not a database, unreachable, migrated by a newer program)."""


class Keep:
    """Marker: leave the column as it is."""


KEEP = Keep()


def check_state(state: str) -> None:
    if state not in RUN_STATES:
        raise ValueError(f"unknown run state {state!r}; expected one of {RUN_STATES}")


def check_outcome(outcome: str) -> None:
    if outcome not in ATTEMPT_OUTCOMES:
        raise ValueError(f"unknown attempt outcome {outcome!r}; expected one of {ATTEMPT_OUTCOMES}")


def payload_json(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def transition_sql(
    run_key: str,
    to: str,
    now: float,
    *,
    mark: str,
    from_states: Collection[str] | None,
    holder: str | None = None,
    take_lease: tuple[str, float] | None = None,
    error: str | None | Keep = KEEP,
) -> tuple[str, list[Any]]:
    """The UPDATE behind every change of `runs.state` (`mark`: the engine's placeholder, ? or %s).

    from_states None: from any state. holder: only while that owner holds the lease. take_lease
    (owner, ttl_s): the claim's compare-and-set, the lease must be free, expired or the owner's.
    A terminal state sets finished_at and clears the lease; `queued` clears it too (the run is
    given back); other states keep it, unless take_lease sets it.
    """
    check_state(to)
    sets: list[str] = [f"state = {mark}", f"updated_at = {mark}"]
    params: list[Any] = [to, now]
    if not isinstance(error, Keep):
        sets.append(f"error = {mark}")
        params.append(error)
    if to in TERMINAL_STATES:
        sets.append(f"finished_at = {mark}")
        params.append(now)
    else:
        sets.append("finished_at = NULL")
    if take_lease is not None:
        sets += [f"lease_owner = {mark}", f"lease_expires_at = {mark}"]
        params += [take_lease[0], now + take_lease[1]]
    elif to in TERMINAL_STATES or to == "queued":
        sets += ["lease_owner = NULL", "lease_expires_at = NULL"]
    where: list[str] = [f"run_key = {mark}"]
    params.append(run_key)
    if from_states is not None:
        where.append(f"state IN ({','.join([mark] * len(from_states))})")
        params += list(from_states)
    if holder is not None:
        where.append(f"lease_owner = {mark}")
        params.append(holder)
    if take_lease is not None:
        where.append(f"(lease_owner IS NULL OR lease_owner = {mark} OR lease_expires_at <= {mark})")
        params += [take_lease[0], now]
    return f"UPDATE runs SET {', '.join(sets)} WHERE {' AND '.join(where)}", params


def attempt_record(
    run_key: str,
    stage: str,
    attempt: int,
    outcome: str,
    duration_s: float,
    usage: Usage,
    error: str | None,
    authoritative: bool,
    owner: str | None,
    now: float,
) -> tuple[list[Any], AttemptRecord]:
    """The `attempts` row's values (in INSERT_ATTEMPT's column order) and the record it stands for."""
    values = [
        run_key,
        stage,
        attempt,
        outcome,
        int(authoritative),
        duration_s,
        usage.model,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.cost_usd,
        usage.calls,
        error,
        owner,
        now,
    ]
    record = AttemptRecord(
        run_key, stage, attempt, outcome, duration_s, usage, error, authoritative, owner, now
    )
    return values, record


ATTEMPT_COLUMNS = (
    "run_key, stage, attempt, outcome, authoritative, duration_s, model, input_tokens, output_tokens, "
    "cache_read_tokens, cache_write_tokens, cost_usd, llm_calls, error, owner, created_at"
)


def attempt_of(r: Any) -> AttemptRecord:
    return AttemptRecord(
        run_key=r["run_key"],
        stage=r["stage"],
        attempt=int(r["attempt"]),
        outcome=r["outcome"],
        duration_s=float(r["duration_s"]),
        usage=Usage(
            model=r["model"],
            input_tokens=int(r["input_tokens"]),
            output_tokens=int(r["output_tokens"]),
            cache_read_tokens=int(r["cache_read_tokens"]),
            cache_write_tokens=int(r["cache_write_tokens"]),
            cost_usd=float(r["cost_usd"]),
            calls=int(r["llm_calls"]),
        ),
        error=r["error"],
        authoritative=bool(r["authoritative"]),
        owner=r["owner"],
        at=float(r["created_at"]),
    )


def run_of(r: Any) -> RunRecord:
    return RunRecord(
        run_key=r["run_key"],
        state=r["state"],
        meta=json.loads(r["meta"]),
        error=r["error"],
        lease_owner=r["lease_owner"],
        lease_expires_at=r["lease_expires_at"],
        created_at=float(r["created_at"]),
        updated_at=float(r["updated_at"]),
        finished_at=r["finished_at"],
    )


SELECT_ITEM = """SELECT q.*, r.state AS state, r.lease_owner AS lease_owner,
       r.lease_expires_at AS lease_expires_at, r.error AS error
  FROM queue q JOIN runs r ON r.run_key = q.run_key"""


def item_of(r: Any) -> QueueItem:
    return QueueItem(
        run_key=r["run_key"],
        kind=r["kind"],
        state=r["state"],
        installation_id=r["installation_id"],
        repo=r["repo"],
        pr_number=int(r["pr_number"]),
        adr_path=r["adr_path"],
        head_sha=r["head_sha"],
        spec=json.loads(r["spec"] or "{}"),
        parent_key=r["parent_key"],
        hook_id=r["hook_id"],
        delivery_id=r["delivery_id"],
        enqueued_at=float(r["enqueued_at"]),
        attempts=int(r["attempts"]),
        max_attempts=int(r["max_attempts"]),
        lease_owner=r["lease_owner"],
        lease_expires_at=r["lease_expires_at"],
        progress_at=r["progress_at"],
        last_error=r["last_error"],
        stalled_by_watchdog=bool(r["stalled_by_watchdog"]),
        cancel_reason=r["cancel_reason"],
        error=r["error"],
    )


def health_facts(rows: Sequence[Any], now: float, ok: bool, error: str | None) -> dict[str, Any]:
    """/healthz's store facts from the (state, count, oldest enqueued_at) rows of active runs."""
    by_state = {str(r["state"]): (int(r["n"]), r["oldest"]) for r in rows}
    queued, oldest = by_state.get("queued", (0, None))
    out: dict[str, Any] = {
        "store_ok": ok,
        "queue_depth": queued,
        "running": by_state.get("running", (0, None))[0],
        "oldest_queued_age_s": round(now - oldest, 3) if oldest is not None else None,
    }
    if error:
        out["store_error"] = error
    return out


HEALTH_SQL = """SELECT r.state AS state, COUNT(*) AS n, MIN(q.enqueued_at) AS oldest
  FROM queue q JOIN runs r ON r.run_key = q.run_key
 WHERE r.state IN ('queued', 'running') GROUP BY r.state"""
