"""The StateStore port on SQLite: runs, checkpoints, attempts, deliveries and the App's queue.

`SqliteStateStore(path)` is a file in WAL mode (the App, the Action's cache; several processes on one
host can share it); `SqliteStateStore(":memory:")` is the same store for one process (local one-off
runs). One class: its queue and lock methods in queue.py and locks.py over connection.py (the
connection, transactions, the one state-transition function), the statements both engines share in
app/adapters/state_runs.py and feedback_sql.py; one migration list in migrations.py.
"""

from __future__ import annotations

from app.adapters.feedback_sql import FeedbackTables
from app.adapters.state_runs import RunsTables
from app.adapters.state_sqlite.connection import StoreError
from app.adapters.state_sqlite.locks import LocksTables
from app.adapters.state_sqlite.queue import QueueTables


class SqliteStateStore(QueueTables, LocksTables, RunsTables, FeedbackTables):
    """Implements app.pipeline.ports.StateStore. Open one instance per process and share it between
    threads (one connection behind a lock); close it when done."""

    _mark = "?"  # the placeholder of the shared statements (state_runs, feedback_sql)

    def __enter__(self) -> SqliteStateStore:
        return self


__all__ = ["SqliteStateStore", "StoreError"]
