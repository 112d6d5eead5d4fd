"""The StateStore port on PostgreSQL (psycopg 3): the same contract as app/adr_review/adapters/state_sqlite/,
for several web and worker processes on several hosts sharing one database.

`PostgresStateStore(url)` opens a connection pool on `postgresql://user:password@host:port/db`
(libpq's URL or key=value form; `?options=-csearch_path%3Dname` puts the tables in a schema) and applies
the pending migrations. Only the connection, the transactions, the run lock and the dialect are its
own (connection.py), and its DDL (migrations.py): the statements are the SQLite store's, written once
(app/adr_review/adapters/state_queue.py, state_locks.py, state_runs.py, feedback_sql.py over state_sql.py), with
`FOR UPDATE SKIP LOCKED` on the claim's row and a sequence for the push order (the dialect).
Import it only when a database URL is configured: it imports psycopg.
"""

from __future__ import annotations

from adr_review.adapters.feedback_sql import FeedbackTables
from adr_review.adapters.state_common import StoreError
from adr_review.adapters.state_locks import LocksTables
from adr_review.adapters.state_postgres.connection import Connection
from adr_review.adapters.state_queue import QueueTables
from adr_review.adapters.state_runs import RunsTables


class PostgresStateStore(Connection, QueueTables, LocksTables, RunsTables, FeedbackTables):
    """Implements adr_review.pipeline.ports.StateStore. One instance per process, shared by its threads
    (a connection pool of `pool_size`); close it when done."""

    def __enter__(self) -> PostgresStateStore:
        return self


__all__ = ["PostgresStateStore", "StoreError"]
