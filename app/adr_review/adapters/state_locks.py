"""Named locks (the Locks part of the port), written once for both engines: one row per held lock,
taken by an upsert that succeeds only when the lock is free, expired or already the caller's."""

from __future__ import annotations

from adr_review.adapters.state_sql import SqlTables


class LocksTables(SqlTables):
    def try_lock(self, name: str, owner: str, ttl_s: float) -> bool:
        m = self._sql.mark
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                f"""INSERT INTO locks (name, owner, expires_at) VALUES ({m}, {m}, {m})
                    ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                    WHERE locks.owner = excluded.owner OR locks.expires_at <= {m}""",
                (name, owner, now + ttl_s, now),
            )
            return bool(cur.rowcount == 1)

    def unlock(self, name: str, owner: str) -> None:
        m = self._sql.mark
        with self._tx() as cur:
            cur.execute(f"DELETE FROM locks WHERE name = {m} AND owner = {m}", (name, owner))
