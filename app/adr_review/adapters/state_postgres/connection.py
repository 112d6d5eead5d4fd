"""The PostgreSQL store's connections, transactions, clock, run lock and dialect (the statements are
shared: app/adr_review/adapters/state_sql.py and the table mixins).

A psycopg 3 connection pool per store instance (worker threads, the web server's threads and the
blind-spot critics share it), each connection checked before use (a server restart leaves the pooled
ones dead); every method is one transaction. Read-modify-writes of one run take its
`runs` row with SELECT ... FOR UPDATE first, which orders them per run (attempt and sequence numbers);
the claim takes it with SKIP LOCKED. Times are the database's clock: the offset between this host and
the server is measured on open, so every host computes leases on one clock.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from adr_review.adapters.state_common import StoreError
from adr_review.adapters.state_migrations import MigrationError, migrate
from adr_review.adapters.state_postgres.migrations import LOCK_ID, MIGRATIONS
from adr_review.adapters.state_sql import Clock, Dialect, SqlTables, unavailable_as_infrastructure
from adr_review.pipeline.ports import InfrastructureError

log = logging.getLogger(__name__)

Cursor = psycopg.Cursor[dict[str, Any]]
POSTGRES = Dialect(
    mark="%s",
    claim_lock="FOR UPDATE OF r SKIP LOCKED",
    next_push_order="nextval('pr_heads_push_order')",
    migrators_lock=f"SELECT pg_advisory_xact_lock({LOCK_ID})",
    real="DOUBLE PRECISION",
    error=psycopg.Error,
    unavailable=(psycopg.OperationalError, psycopg.InterfaceError),  # PoolTimeout is an OperationalError
)


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


class Connection(SqlTables):
    """Opening, migrating and transacting (the tables' statements are in the shared mixins)."""

    _sql = POSTGRES
    _mark = POSTGRES.mark

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
            # a connection is checked before it is handed out: after a server restart the pooled ones
            # are dead, and a request must get a fresh one instead of failing on a stale one
            check=ConnectionPool.check_connection,
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
            migrate(self._tx, MIGRATIONS, POSTGRES)
        except (psycopg.Error, InfrastructureError) as exc:
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
        with (
            unavailable_as_infrastructure(POSTGRES, self.location),
            self._pool.connection() as conn,
            conn.transaction(),
            conn.cursor() as cur,
        ):
            yield cur

    def _read(self, sql: str, params: Collection[Any] = ()) -> list[dict[str, Any]]:
        with self._tx() as cur:
            return cur.execute(sql, list(params)).fetchall()

    def _lock_run(self, cur: Cursor, run_key: str) -> None:
        """Take the run's row for the rest of the transaction: numbering attempts and checkpoints of
        one run is then one writer at a time, whichever host it runs on."""
        cur.execute("SELECT 1 FROM runs WHERE run_key = %s FOR UPDATE", (run_key,))
