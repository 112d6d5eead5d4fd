"""The StateStore port on PostgreSQL (psycopg 3): the same contract as app/adapters/state_sqlite/,
for several web and worker processes on several hosts sharing one database.

`PostgresStateStore(url)` opens a connection pool on `postgresql://user:password@host:port/db`
(libpq's URL or key=value form; `?options=-csearch_path%3Dname` puts the tables in a schema) and applies
the pending migrations. Claims take the run's row with `FOR UPDATE SKIP LOCKED`; leases, checkpoints
and attempts follow the SQLite store statement for statement (state_common.py holds what they share).
Import it only when a database URL is configured: it imports psycopg.
"""

from __future__ import annotations

from app.adapters.feedback_sql import FeedbackTables
from app.adapters.state_common import StoreError
from app.adapters.state_postgres.locks import LocksTables
from app.adapters.state_postgres.queue import QueueTables
from app.adapters.state_runs import RunsTables


class PostgresStateStore(QueueTables, LocksTables, RunsTables, FeedbackTables):
    """Implements app.pipeline.ports.StateStore. One instance per process, shared by its threads
    (a connection pool of `pool_size`); close it when done."""

    _mark = "%s"  # the placeholder of the shared statements (state_runs, feedback_sql)

    def __enter__(self) -> PostgresStateStore:
        return self


__all__ = ["PostgresStateStore", "StoreError"]
