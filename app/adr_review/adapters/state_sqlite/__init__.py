"""The StateStore port on SQLite: runs, checkpoints, attempts, deliveries and the App's queue.

`SqliteStateStore(path)` is a file in WAL mode (the App, the Action's cache; several processes on one
host can share it); `SqliteStateStore(":memory:")` is the same store for one process (local one-off
runs). One class: connection.py (the connection, transactions, the run lock and the dialect) under
the statements both engines share (app/adr_review/adapters/state_queue.py, state_locks.py, state_runs.py,
feedback_sql.py over state_sql.py); its DDL, one migration list, in migrations.py.
"""

from __future__ import annotations

from adr_review.adapters.feedback_sql import FeedbackTables
from adr_review.adapters.state_locks import LocksTables
from adr_review.adapters.state_queue import QueueTables
from adr_review.adapters.state_runs import RunsTables
from adr_review.adapters.state_sqlite.connection import Connection, StoreError


class SqliteStateStore(Connection, QueueTables, LocksTables, RunsTables, FeedbackTables):
    """Implements adr_review.pipeline.ports.StateStore. Open one instance per process and share it between
    threads (one connection behind a lock); close it when done."""

    def __enter__(self) -> SqliteStateStore:
        return self


__all__ = ["SqliteStateStore", "StoreError"]
