"""Named locks (the Locks part of the port): one row per held lock, taken by an upsert that succeeds
only when the lock is free, expired or already the caller's."""

from __future__ import annotations

from app.adapters.state_sqlite.connection import Connection


class LocksTables(Connection):
    def try_lock(self, name: str, owner: str, ttl_s: float) -> bool:
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                """INSERT INTO locks (name, owner, expires_at) VALUES (?, ?, ?)
                   ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                   WHERE locks.owner = excluded.owner OR locks.expires_at <= ?""",
                (name, owner, now + ttl_s, now),
            )
            return cur.rowcount == 1

    def unlock(self, name: str, owner: str) -> None:
        with self._tx() as cur:
            cur.execute("DELETE FROM locks WHERE name = ? AND owner = ?", (name, owner))
