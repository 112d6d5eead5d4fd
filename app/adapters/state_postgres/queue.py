"""Deliveries, the App's queue and the push order (the RunQueue part of the port) on PostgreSQL: the SQLite store's statements with ON CONFLICT for its INSERT OR IGNORE, row locks
(FOR UPDATE, SKIP LOCKED for the claim) for its BEGIN IMMEDIATE, and a sequence for the push order.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

import psycopg

from app.adapters.state_common import (
    ACTIVE,
    HEALTH_SQL,
    SELECT_ITEM,
    TERMINAL_SQL,
    health_facts,
    item_of,
    payload_json,
)
from app.adapters.state_postgres.connection import Connection, Cursor
from app.pipeline.ports import TERMINAL_STATES
from app.pipeline.queue import Accepted, Delivery, QueueItem, RunSpec


class QueueTables(Connection):
    # -- webhook side ------------------------------------------------------------------------------------
    def accept_delivery(self, delivery: Delivery, runs: Sequence[RunSpec]) -> Accepted:
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                """INSERT INTO deliveries (hook_id, delivery_id, event, action, installation_id,
                       repo, received_at, body_sha256, payload, run_keys)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (hook_id, delivery_id) DO NOTHING""",
                (
                    delivery.hook_id,
                    delivery.delivery_id,
                    delivery.event,
                    delivery.action,
                    delivery.installation_id,
                    delivery.repo,
                    now,
                    delivery.body_sha256,
                    delivery.payload,
                    json.dumps([r.run_key for r in runs]),
                ),
            )
            if cur.rowcount != 1:
                row = cur.execute(
                    """UPDATE deliveries SET duplicates = duplicates + 1
                       WHERE hook_id = %s AND delivery_id = %s RETURNING run_keys""",
                    (delivery.hook_id, delivery.delivery_id),
                ).fetchone()
                assert row is not None
                return Accepted(False, tuple(json.loads(row["run_keys"])), 0)
            new = self._enqueue(cur, runs, delivery, now)
            for r in runs:
                if r.kind == "plan" and r.head_sha:  # a push (or an open) of this head arrived now
                    self._note_head(cur, r.repo, r.pr_number, r.head_sha, now)
            return Accepted(True, tuple(r.run_key for r in runs), new)

    def enqueue(self, runs: Sequence[RunSpec]) -> int:
        with self._tx() as cur:
            return self._enqueue(cur, runs, None, self._clock())

    def _enqueue(self, cur: Cursor, runs: Sequence[RunSpec], d: Delivery | None, now: float) -> int:
        new = 0
        for r in sorted(runs, key=lambda r: r.run_key):  # one row order for every writer: no deadlock
            meta = {
                "kind": r.kind,
                "repo": r.repo,
                "pr": r.pr_number,
                "adr_path": r.adr_path,
                "head_sha": r.head_sha,
            }
            self._ensure_row(cur, r.run_key, meta)
            cur.execute(
                """INSERT INTO queue (run_key, kind, installation_id, repo, pr_number, adr_path, head_sha,
                       spec, parent_key, hook_id, delivery_id, enqueued_at, not_before, max_attempts)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (run_key) DO NOTHING""",
                (
                    r.run_key,
                    r.kind,
                    r.installation_id,
                    r.repo,
                    r.pr_number,
                    r.adr_path,
                    r.head_sha,
                    payload_json(r.spec),
                    r.parent_key,
                    d.hook_id if d else None,
                    d.delivery_id if d else None,
                    now,
                    now,
                    r.max_attempts,
                ),
            )
            new += cur.rowcount
        return new

    def stored_guids(self, guids: Sequence[str]) -> set[str]:
        if not guids:
            return set()
        rows = self._read(
            "SELECT DISTINCT delivery_id FROM deliveries WHERE delivery_id = ANY(%s)", (list(guids),)
        )
        return {str(r["delivery_id"]) for r in rows}

    def delivery_payload(self, hook_id: str | None, delivery_id: str | None) -> str | None:
        rows = self._read(
            "SELECT payload FROM deliveries WHERE hook_id = %s AND delivery_id = %s", (hook_id, delivery_id)
        )
        return str(rows[0]["payload"]) if rows else None

    def delivery_count(self) -> int:
        return int(self._read("SELECT COUNT(*) AS n FROM deliveries")[0]["n"])

    # -- worker side -------------------------------------------------------------------------------------
    def due(self, limit: int = 10) -> list[QueueItem]:
        """Plans first: they are cheap, and a plan for a newer head cancels the queued reviews it
        supersedes before anyone pays for them."""
        now = self._clock()
        rows = self._read(
            f"""{SELECT_ITEM}
                WHERE r.state IN ('queued', 'running') AND q.not_before <= %s
                  AND (r.lease_owner IS NULL OR r.lease_expires_at <= %s)
                ORDER BY q.kind = 'plan' DESC, q.enqueued_at, q.run_key LIMIT %s""",
            (now, now, limit),
        )
        return [item_of(r) for r in rows]

    def item(self, run_key: str) -> QueueItem | None:
        rows = self._read(f"{SELECT_ITEM} WHERE q.run_key = %s", (run_key,))
        return item_of(rows[0]) if rows else None

    def items(self) -> list[QueueItem]:
        return [item_of(r) for r in self._read(f"{SELECT_ITEM} ORDER BY q.enqueued_at, q.run_key")]

    def claim(self, run_key: str, owner: str, ttl_s: float) -> QueueItem | None:
        """SELECT ... FOR UPDATE SKIP LOCKED of the run's row: a worker that finds it taken by another
        claimer (or by a write of the run's holder) gives up at once instead of queueing behind it."""
        with self._tx() as cur:
            prev = cur.execute(
                """SELECT r.state, r.lease_owner, q.attempts FROM runs r JOIN queue q USING (run_key)
                   WHERE r.run_key = %s FOR UPDATE OF r SKIP LOCKED""",
                (run_key,),
            ).fetchone()
            if prev is None:  # not a queued run, or someone holds its row right now
                return None
            if not self._transition(cur, run_key, "running", from_states=ACTIVE, take_lease=(owner, ttl_s)):
                return None
            now = self._clock()
            if prev["state"] == "running" and prev["lease_owner"] not in (None, owner):
                # The previous attempt's worker died or hung: its lease expired without a terminal state.
                dead, n = prev["lease_owner"], prev["attempts"]
                error = f"lease_expired: attempt {n} by {dead} ended without a result"
                self._insert_attempt(cur, run_key, "run", None, "failed", 0.0, None, error, False, owner)
            cur.execute(
                "UPDATE queue SET attempts = attempts + 1, progress_at = %s WHERE run_key = %s",
                (now, run_key),
            )
            row = cur.execute(f"{SELECT_ITEM} WHERE q.run_key = %s", (run_key,)).fetchone()
        assert row is not None
        return item_of(row)

    def renew(self, run_key: str, owner: str, ttl_s: float) -> bool:
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                f"""UPDATE runs SET lease_expires_at = %s, updated_at = %s
                    WHERE run_key = %s AND lease_owner = %s AND state NOT IN ({TERMINAL_SQL})""",
                (now + ttl_s, now, run_key, owner),
            )
            return cur.rowcount == 1

    def release(self, run_key: str, owner: str) -> None:
        with self._tx() as cur:
            cur.execute(
                """UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL
                   WHERE run_key = %s AND lease_owner = %s""",
                (run_key, owner),
            )

    def progress(self, run_key: str) -> None:
        with self._tx() as cur:
            cur.execute("UPDATE queue SET progress_at = %s WHERE run_key = %s", (self._clock(), run_key))

    def finish(self, run_key: str, owner: str, state: str, error: str | None = None) -> bool:
        if state not in TERMINAL_STATES:
            raise ValueError(f"finish needs a terminal state, not {state!r}")
        with self._tx() as cur:
            done = self._transition(cur, run_key, state, from_states=("running",), holder=owner, error=error)
            if done and error:
                cur.execute("UPDATE queue SET last_error = %s WHERE run_key = %s", (error, run_key))
            return done

    def retry_later(self, run_key: str, owner: str, error: str, delay_s: float) -> bool:
        with self._tx() as cur:
            if not self._transition(
                cur, run_key, "queued", from_states=("running",), holder=owner, error=error
            ):
                return False
            cur.execute(
                "UPDATE queue SET last_error = %s, not_before = %s WHERE run_key = %s",
                (error, self._clock() + delay_s, run_key),
            )
            return True

    def exhausted(self, run_key: str) -> bool:
        rows = self._read("SELECT attempts >= max_attempts AS done FROM queue WHERE run_key = %s", (run_key,))
        return bool(rows and rows[0]["done"])

    def cancel_superseded(
        self,
        repo: str,
        pr_number: int,
        adr_path: str | None,
        head_sha: str,
        reason: str,
        keep: Collection[str] = (),
    ) -> list[str]:
        where = "q.repo = %s AND q.pr_number = %s AND q.head_sha != '' AND q.head_sha != %s"
        params: list[Any] = [repo, pr_number, head_sha]
        if adr_path is not None:
            where += " AND q.adr_path = %s"
            params.append(adr_path)
        with self._tx() as cur:
            order = self._order_of(cur, repo, pr_number, head_sha)
            rows = cur.execute(
                f"""SELECT q.run_key FROM queue q JOIN runs r ON r.run_key = q.run_key
                    LEFT JOIN pr_heads h
                      ON h.repo = q.repo AND h.pr_number = q.pr_number AND h.head_sha = q.head_sha
                    WHERE {where} AND COALESCE(h.push_order, 0) < %s
                      AND r.state IN ('queued', 'running') ORDER BY q.run_key""",
                [*params, order],
            ).fetchall()
            keys = [
                str(r["run_key"])
                for r in rows
                if str(r["run_key"]) not in keep and self._cancel(cur, str(r["run_key"]), reason)
            ]
        return keys

    def cancel(self, run_key: str, reason: str) -> bool:
        with self._tx() as cur:
            return self._cancel(cur, run_key, reason)

    def _cancel(self, cur: Cursor, run_key: str, reason: str) -> bool:
        if not self._transition(cur, run_key, "cancelled", from_states=ACTIVE, error=reason):
            return False
        cur.execute("UPDATE queue SET cancel_reason = %s WHERE run_key = %s", (reason, run_key))
        return True

    def state(self, run_key: str) -> str | None:
        rows = self._read("SELECT state FROM runs WHERE run_key = %s", (run_key,))
        return str(rows[0]["state"]) if rows else None

    def watchdog(self, stall_after_s: float) -> list[str]:
        err = f"stalled_by_watchdog: no stage progress for {stall_after_s:.0f} s"
        with self._tx() as cur:
            rows = cur.execute(
                """SELECT q.run_key FROM queue q JOIN runs r ON r.run_key = q.run_key
                   WHERE r.state = 'running' AND COALESCE(q.progress_at, q.enqueued_at) < %s
                   ORDER BY q.run_key""",
                (self._clock() - stall_after_s,),
            ).fetchall()
            keys = []
            for r in rows:
                key = str(r["run_key"])
                if self._transition(cur, key, "failed", from_states=("running",), error=err):
                    cur.execute(
                        "UPDATE queue SET stalled_by_watchdog = 1, last_error = %s WHERE run_key = %s",
                        (err, key),
                    )
                    keys.append(key)
        return keys

    # -- push order --------------------------------------------------------------------------------------
    def push_order(self, repo: str, pr_number: int, head_sha: str) -> int:
        with self._tx() as cur:
            return self._order_of(cur, repo, pr_number, head_sha)

    def _order_of(self, cur: Cursor, repo: str, pr_number: int, head_sha: str) -> int:
        row = cur.execute(
            """INSERT INTO pr_heads (repo, pr_number, head_sha, push_order, seen_at)
               VALUES (%s, %s, %s, nextval('pr_heads_push_order'), %s)
               ON CONFLICT (repo, pr_number, head_sha) DO NOTHING RETURNING push_order""",
            (repo, pr_number, head_sha, self._clock()),
        ).fetchone()
        if row is None:
            row = cur.execute(
                "SELECT push_order FROM pr_heads WHERE repo = %s AND pr_number = %s AND head_sha = %s",
                (repo, pr_number, head_sha),
            ).fetchone()
        assert row is not None
        return int(row["push_order"])

    def _note_head(self, cur: Cursor, repo: str, pr_number: int, head_sha: str, now: float) -> int:
        """The head arrived now: the next number of the one sequence."""
        row = cur.execute(
            """INSERT INTO pr_heads (repo, pr_number, head_sha, push_order, seen_at)
               VALUES (%s, %s, %s, nextval('pr_heads_push_order'), %s)
               ON CONFLICT (repo, pr_number, head_sha) DO UPDATE SET push_order = EXCLUDED.push_order,
                   seen_at = EXCLUDED.seen_at
               RETURNING push_order""",
            (repo, pr_number, head_sha, now),
        ).fetchone()
        assert row is not None
        return int(row["push_order"])

    # -- health ------------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """Reads only: one query (an unauthenticated request must not make the store write)."""
        try:
            return health_facts(self._read(HEALTH_SQL), self._clock(), True, None)
        except psycopg.Error as exc:
            return health_facts([], self._clock(), False, str(exc))
