"""The runner of both engines' migration lists (the model: simonw/llm's migrations.py).

Each engine keeps its own ordered list of named migrations (its DDL: state_sqlite/migrations.py,
state_postgres/migrations.py); each is applied once, in its own transaction, and its name recorded in
`_migrations`. Never edit an applied migration: add a new one at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from adr_review.adapters.state_sql import Dialect

Migration = Callable[[Any], None]  # runs the DDL on the transaction's cursor


class MigrationError(RuntimeError):
    pass


class MigrationList(list[Migration]):
    """An append-only list: `migration = MIGRATIONS.add`, then `@migration` on each function, in order."""

    def add(self, fn: Migration) -> Migration:
        self.append(fn)
        return fn


def run(cur: Any, *statements: str) -> None:
    for statement in statements:
        cur.execute(statement)


def migrate(
    tx: Callable[[], AbstractContextManager[Any]], migrations: Sequence[Migration], sql: Dialect
) -> list[str]:
    """Apply the pending migrations in order, each in a write transaction from `tx` (behind the
    dialect's migrators' lock); return the names applied now. MigrationError: the database was
    migrated by a newer program (a name this list lacks)."""
    names = [fn.__name__ for fn in migrations]
    m = sql.mark
    with tx() as cur:
        _take_turn(cur, sql)
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at {sql.real} NOT NULL)"
        )
        unknown = sorted({str(r["name"]) for r in cur.execute("SELECT name FROM _migrations")} - set(names))
    if unknown:
        raise MigrationError(f"migrated by a newer program (unknown migrations: {', '.join(unknown)})")
    applied_now: list[str] = []
    for fn in migrations:
        with tx() as cur:  # re-read inside the lock: another process may have applied it
            _take_turn(cur, sql)
            if cur.execute(f"SELECT 1 FROM _migrations WHERE name = {m}", (fn.__name__,)).fetchone():
                continue
            fn(cur)
            cur.execute(
                f"INSERT INTO _migrations (name, applied_at) VALUES ({m}, {m})", (fn.__name__, time.time())
            )
            applied_now.append(fn.__name__)
    return applied_now


def _take_turn(cur: Any, sql: Dialect) -> None:
    if sql.migrators_lock:
        cur.execute(sql.migrators_lock)
