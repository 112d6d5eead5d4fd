"""The SQLite store's connection, transactions, run lock and dialect (the statements are shared:
app/adr_review/adapters/state_sql.py and the table mixins).

One connection per store instance behind a re-entrant lock (threads: the blind-spot critics call the
memo concurrently, and `:memory:` is one database only through one shared connection) and
BEGIN IMMEDIATE around every read-modify-write (processes sharing a file in WAL mode).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from adr_review.adapters.state_common import StoreError
from adr_review.adapters.state_migrations import MigrationError, migrate
from adr_review.adapters.state_sql import Clock, Dialect, SqlTables, unavailable_as_infrastructure
from adr_review.adapters.state_sqlite.migrations import MIGRATIONS
from adr_review.pipeline.ports import InfrastructureError

MEMORY = ":memory:"
SQLITE = Dialect(
    mark="?",
    claim_lock="",
    next_push_order="(SELECT COALESCE(MAX(push_order), 0) + 1 FROM pr_heads)",
    migrators_lock="",
    real="REAL",
    error=sqlite3.Error,
    unavailable=(sqlite3.OperationalError,),  # "database is locked" past the busy timeout, disk I/O
)
__all__ = ["SQLITE", "Connection", "StoreError", "private_file"]


def private_file(path: Path) -> None:
    """Create the store file 0600 (it holds raw webhook payloads) in a folder made 0700, before SQLite
    opens it: SQLite gives its -wal and -shm files the database file's mode. An existing file that
    others can read is tightened."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


class Connection(SqlTables):
    """Opening, migrating and transacting (the tables' statements are in the shared mixins)."""

    _sql = SQLITE
    _mark = SQLITE.mark

    def __init__(
        self, path: str | Path = MEMORY, *, clock: Clock = time.time, busy_timeout_s: float = 30.0
    ) -> None:
        self.location = str(path)
        self._clock = clock
        self._lock = threading.RLock()
        memory = self.location == MEMORY
        try:
            if not memory:
                private_file(Path(path))
            self._conn = sqlite3.connect(
                self.location, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the store {self.location}: {exc}") from exc
        try:
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            if not memory:
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"{self.location}: cannot enable WAL mode (got {mode})")
                self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            migrate(self._tx, MIGRATIONS, SQLITE)
        except (sqlite3.Error, InfrastructureError) as exc:  # e.g. "file is not a database": say which
            self._conn.close()
            raise StoreError(f"cannot open the store {self.location}: {exc}") from exc
        except MigrationError as exc:
            self._conn.close()
            raise StoreError(f"{self.location}: {exc}") from exc
        except StoreError:
            self._conn.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Cursor]:
        """BEGIN IMMEDIATE: take the write lock up front so read-then-write cannot interleave."""
        with unavailable_as_infrastructure(SQLITE, self.location), self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")
            finally:
                cur.close()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with unavailable_as_infrastructure(SQLITE, self.location), self._lock:
            rows: list[sqlite3.Row] = self._conn.execute(sql, params).fetchall()
            return rows

    def _lock_run(self, cur: sqlite3.Cursor, run_key: str) -> None:
        """Nothing to take: BEGIN IMMEDIATE already makes this transaction the one writer."""
