"""The PostgreSQL store's connections, transactions, clock, the state transition and the attempt writer.

A psycopg 3 connection pool per store instance (worker threads, the web server's threads and the
blind-spot critics share it); every method is one transaction. Read-modify-writes of one run take its
`runs` row with SELECT ... FOR UPDATE first, which orders them per run (attempt and sequence numbers);
the claim takes it with SKIP LOCKED. Times are the database's clock: the offset between this host and
the server is measured on open, so every host computes leases on one clock.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from app.adapters.state_common import (
    ATTEMPT_COLUMNS,
    KEEP,
    Keep,
    StoreError,
    attempt_record,
    check_outcome,
    payload_json,
    transition_sql,
)
from app.adapters.state_postgres.migrations import MigrationError, migrate
from app.core.results import Usage
from app.pipeline.ports import AttemptRecord

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Cursor = psycopg.Cursor[dict[str, Any]]


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def marks(n: int) -> str:
    return ",".join(["%s"] * n)


class Connection:
    """Opening, migrating and transacting; the store's tables are written through this class only."""

    def __init__(
        self,
        url: str,
        *,
        clock: Clock | None = None,
        pool_size: int = 8,
        connect_timeout_s: float = 15.0,
    ) -> None:
        self.location = redact(url)
        self._pool: ConnectionPool[psycopg.Connection[dict[str, Any]]] = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"row_factory": dict_row},
            open=False,
            name="adr-review-state",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout_s)
        except Exception as exc:  # PoolTimeout: the server is down, the URL or the credentials are wrong
            self._pool.close()
            raise StoreError(f"cannot open the store {self.location}: {exc}") from exc
        try:
            self._clock = clock or self._database_clock()
            migrate(self._tx)
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreError(f"cannot open the store {self.location}: {exc}") from exc
        except MigrationError as exc:
            self._pool.close()
            raise StoreError(f"{self.location}: {exc}") from exc

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _database_clock(self) -> Clock:
        """time.time() shifted onto the server's clock (measured once, half a round trip precise)."""
        with self._tx() as cur:
            before = time.time()
            row = cur.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8 AS now").fetchone()
            after = time.time()
        assert row is not None
        offset = float(row["now"]) - (before + after) / 2
        if abs(offset) > 5:
            log.warning("store_clock_offset", extra={"offset_s": round(offset, 3), "store": self.location})
        return lambda: time.time() + offset

    @contextmanager
    def _tx(self) -> Iterator[Cursor]:
        """One transaction on a pooled connection: committed on success, rolled back on an error."""
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    def _read(self, sql: str, params: Collection[Any] = ()) -> list[dict[str, Any]]:
        with self._tx() as cur:
            return cur.execute(sql, list(params)).fetchall()

    def _ensure_row(self, cur: Cursor, run_key: str, meta: Mapping[str, Any] | None = None) -> None:
        now = self._clock()
        cur.execute(
            """INSERT INTO runs (run_key, meta, created_at, updated_at) VALUES (%s, %s, %s, %s)
               ON CONFLICT (run_key) DO NOTHING""",
            (run_key, payload_json(meta or {}), now, now),
        )

    def _lock_run(self, cur: Cursor, run_key: str) -> None:
        """Take the run's row for the rest of the transaction: numbering attempts and checkpoints of
        one run is then one writer at a time, whichever host it runs on."""
        cur.execute("SELECT 1 FROM runs WHERE run_key = %s FOR UPDATE", (run_key,))

    def _transition(
        self,
        cur: Cursor,
        run_key: str,
        to: str,
        *,
        from_states: Collection[str] | None,
        holder: str | None = None,
        take_lease: tuple[str, float] | None = None,
        error: str | None | Keep = KEEP,
    ) -> bool:
        """Every change of `runs.state` goes through here (state_common.transition_sql says how)."""
        sql, params = transition_sql(
            run_key,
            to,
            self._clock(),
            mark="%s",
            from_states=from_states,
            holder=holder,
            take_lease=take_lease,
            error=error,
        )
        cur.execute(sql, params)
        return cur.rowcount == 1

    def _insert_attempt(
        self,
        cur: Cursor,
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
        if attempt is None:
            row = cur.execute(
                "SELECT COALESCE(MAX(attempt), 0) + 1 AS n FROM attempts WHERE run_key = %s AND stage = %s",
                (run_key, stage),
            ).fetchone()
            assert row is not None
            attempt = int(row["n"])
        now = self._clock()
        values, record = attempt_record(
            run_key, stage, attempt, outcome, duration_s, usage or Usage(), error, authoritative, owner, now
        )
        cur.execute(f"INSERT INTO attempts ({ATTEMPT_COLUMNS}) VALUES ({marks(len(values))})", values)
        cur.execute("UPDATE runs SET updated_at = %s WHERE run_key = %s", (now, run_key))
        return record
