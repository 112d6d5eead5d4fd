"""What an engine of the StateStore tells the shared SQL (state_queue, state_locks, state_runs,
feedback_sql): a small dialect object, and the base class of every table mixin with the writes all of
them build on (the run row, the one state transition, the attempt writer).

An engine (state_sqlite/, state_postgres/) keeps only what really differs: how it connects, how a
transaction is taken (`_tx`), how one run's row is locked (`_lock_run`) and its DDL. The statements
are written once here and in the mixins, with the dialect's placeholder.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from adr_review.adapters.state_common import (
    ATTEMPT_COLUMNS,
    KEEP,
    Keep,
    attempt_record,
    check_outcome,
    payload_json,
    transition_sql,
)
from adr_review.core.results import Usage
from adr_review.pipeline.ports import InfrastructureError
from adr_review.pipeline.state_ports import AttemptRecord

Clock = Callable[[], float]


@dataclass(frozen=True)
class Dialect:
    """Where the engines' SQL differs. Both speak `INSERT ... ON CONFLICT` (SQLite >= 3.24), so the
    upserts are shared as they are; what is left is below."""

    mark: str  # the driver's placeholder: "?" (sqlite3) or "%s" (psycopg)
    # appended to the claim's SELECT of the run's row: PostgreSQL skips a row another claimer holds;
    # SQLite needs nothing (BEGIN IMMEDIATE already makes the transaction the one writer)
    claim_lock: str
    # the next push order, an SQL expression: a sequence, or max + 1 where writers are serialised
    next_push_order: str
    # run first in every migration transaction, so concurrent migrators take turns ("" for none)
    migrators_lock: str
    real: str  # the column type of times (epoch seconds): REAL or DOUBLE PRECISION
    error: type[Exception]  # the driver's base error (health reports it instead of raising)
    # The driver's errors that say the database is not usable right now (a lost or refused
    # connection, a server shutting down, a lock or disk failure), not that a statement is wrong:
    # they leave the store as InfrastructureError, so a run fails and is retried instead of degrading.
    unavailable: tuple[type[Exception], ...] = ()

    def marks(self, n: int) -> str:
        return ",".join([self.mark] * n)


@contextmanager
def unavailable_as_infrastructure(dialect: Dialect, location: str) -> Iterator[None]:
    """Around an engine's transaction: its `unavailable` errors re-raised as InfrastructureError
    (the driver's error chained, its text in the message for the log)."""
    try:
        yield
    except dialect.unavailable as exc:
        raise InfrastructureError(f"state store {location}: {type(exc).__name__}: {exc}") from exc


class SqlTables:
    """The base of the engine's connection class and of every table mixin. The engine provides
    `_sql`, `_clock`, `_tx`, `_read` and `_lock_run`; the rest is written once, here."""

    _sql: Dialect
    _mark: str  # = _sql.mark, the name state_runs and feedback_sql use
    _clock: Clock

    def _tx(self) -> AbstractContextManager[Any]:
        """One transaction; yields a cursor; commits on success, rolls back on an error."""
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of one query (each indexable by column name)."""
        raise NotImplementedError

    def _lock_run(self, cur: Any, run_key: str) -> None:
        """Make this transaction the one writer of the run's row until it ends."""
        raise NotImplementedError

    def _ensure_row(self, cur: Any, run_key: str, meta: Mapping[str, Any] | None = None) -> None:
        now, m = self._clock(), self._sql.mark
        cur.execute(
            f"""INSERT INTO runs (run_key, meta, created_at, updated_at) VALUES ({m}, {m}, {m}, {m})
                ON CONFLICT (run_key) DO NOTHING""",
            (run_key, payload_json(meta or {}), now, now),
        )

    def _transition(
        self,
        cur: Any,
        run_key: str,
        to: str,
        *,
        from_states: Collection[str] | None,
        holder: str | None = None,
        take_lease: tuple[str, float] | None = None,
        error: str | None | Keep = KEEP,
    ) -> bool:
        """Every change of `runs.state` goes through here (state_common.transition_sql says how).
        True when the run moved."""
        sql, params = transition_sql(
            run_key,
            to,
            self._clock(),
            mark=self._sql.mark,
            from_states=from_states,
            holder=holder,
            take_lease=take_lease,
            error=error,
        )
        cur.execute(sql, params)
        return bool(cur.rowcount == 1)

    def _insert_attempt(
        self,
        cur: Any,
        run_key: str,
        stage: str,
        attempt: int | None,
        outcome: str,
        duration_s: float,
        usage: Usage | None,
        error: str | None,
        authoritative: bool,
        owner: str | None,
    ) -> AttemptRecord:
        """The caller holds the run's row (`_lock_run`), so max(attempt) + 1 is this run's alone."""
        check_outcome(outcome)
        m = self._sql.mark
        if attempt is None:
            row = cur.execute(
                f"SELECT COALESCE(MAX(attempt), 0) + 1 AS n FROM attempts WHERE run_key = {m} AND stage = {m}",
                (run_key, stage),
            ).fetchone()
            attempt = int(row["n"])
        now = self._clock()
        values, record = attempt_record(
            run_key, stage, attempt, outcome, duration_s, usage or Usage(), error, authoritative, owner, now
        )
        cur.execute(
            f"INSERT INTO attempts ({ATTEMPT_COLUMNS}) VALUES ({self._sql.marks(len(values))})", values
        )
        cur.execute(f"UPDATE runs SET updated_at = {m} WHERE run_key = {m}", (now, run_key))
        return record
