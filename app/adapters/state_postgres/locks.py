"""Named locks (the Locks part of the port) on PostgreSQL: the SQLite store's upsert, which takes a
lock only when it is free, expired or already the caller's."""

from __future__ import annotations

from app.adapters.state_postgres.connection import Connection


class LocksTables(Connection):
    def try_lock(self, name: str, owner: str, ttl_s: float) -> bool:
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                """INSERT INTO locks (name, owner, expires_at) VALUES (%s, %s, %s)
                   ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
                   WHERE locks.owner = EXCLUDED.owner OR locks.expires_at <= %s""",
                (name, owner, now + ttl_s, now),
            )
            return cur.rowcount == 1

    def unlock(self, name: str, owner: str) -> None:
        with self._tx() as cur:
            cur.execute("DELETE FROM locks WHERE name = %s AND owner = %s", (name, owner))
