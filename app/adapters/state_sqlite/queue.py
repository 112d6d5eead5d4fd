"""Deliveries and the App's queue (the RunQueue part of the port).

`deliveries` is the webhook's dedupe key; `queue` holds what a worker needs to execute a run, its
bounded attempt counter, back-off, last stage progress (the watchdog's clock) and the
`stalled_by_watchdog` flag. State and lease stay on `runs`; a delivery, its run rows and its queue
rows are written in one transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

from app.adapters.state_common import (
    ACTIVE,
    HEALTH_SQL,
    SELECT_ITEM,
    TERMINAL_SQL,
    health_facts,
    item_of,
)
from app.adapters.state_sqlite.connection import Connection, marks, payload_json
from app.pipeline.ports import TERMINAL_STATES
from app.pipeline.queue import Accepted, Delivery, QueueItem, RunSpec


class QueueTables(Connection):
    # -- webhook side ------------------------------------------------------------------------------------
    def accept_delivery(self, delivery: Delivery, runs: Sequence[RunSpec]) -> Accepted:
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                """INSERT OR IGNORE INTO deliveries (hook_id, delivery_id, event, action, installation_id,
                       repo, received_at, body_sha256, payload, run_keys)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
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
                key = (delivery.hook_id, delivery.delivery_id)
                cur.execute(
                    "UPDATE deliveries SET duplicates = duplicates + 1 WHERE hook_id = ? AND delivery_id = ?",
                    key,
                )
                row = cur.execute(
                    "SELECT run_keys FROM deliveries WHERE hook_id = ? AND delivery_id = ?", key
                ).fetchone()
                return Accepted(False, tuple(json.loads(row[0])), 0)
            new = self._enqueue(cur, runs, delivery, now)
            for r in runs:
                if r.kind == "plan" and r.head_sha:  # a push (or an open) of this head arrived now
                    self._note_head(cur, r.repo, r.pr_number, r.head_sha, now)
            return Accepted(True, tuple(r.run_key for r in runs), new)

    def enqueue(self, runs: Sequence[RunSpec]) -> int:
        with self._tx() as cur:
            return self._enqueue(cur, runs, None, self._clock())

    def _enqueue(self, cur: sqlite3.Cursor, runs: Sequence[RunSpec], d: Delivery | None, now: float) -> int:
        new = 0
        for r in runs:
            meta = {
                "kind": r.kind,
                "repo": r.repo,
                "pr": r.pr_number,
                "adr_path": r.adr_path,
                "head_sha": r.head_sha,
            }
            self._ensure_row(cur, r.run_key, meta)
            cur.execute(
                """INSERT OR IGNORE INTO queue (run_key, kind, installation_id, repo, pr_number, adr_path,
                       head_sha, spec, parent_key, hook_id, delivery_id, enqueued_at, not_before, max_attempts)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
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
        found: set[str] = set()
        chunk = 500
        for i in range(0, len(guids), chunk):
            part = list(guids[i : i + chunk])
            rows = self._read(
                f"SELECT DISTINCT delivery_id FROM deliveries WHERE delivery_id IN ({marks(part)})", part
            )
            found.update(str(r[0]) for r in rows)
        return found

    def delivery_payload(self, hook_id: str | None, delivery_id: str | None) -> str | None:
        rows = self._read(
            "SELECT payload FROM deliveries WHERE hook_id = ? AND delivery_id = ?", (hook_id, delivery_id)
        )
        return str(rows[0][0]) if rows else None

    def delivery_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM deliveries")[0][0])

    # -- worker side -------------------------------------------------------------------------------------
    def due(self, limit: int = 10) -> list[QueueItem]:
        """Plans first: they are cheap, and a plan for a newer head cancels the queued reviews it
        supersedes before anyone pays for them."""
        now = self._clock()
        rows = self._read(
            f"""{SELECT_ITEM}
                WHERE r.state IN ('queued', 'running') AND q.not_before <= ?
                  AND (r.lease_owner IS NULL OR r.lease_expires_at <= ?)
                ORDER BY q.kind = 'plan' DESC, q.enqueued_at, q.run_key LIMIT ?""",
            (now, now, limit),
        )
        return [item_of(r) for r in rows]

    def item(self, run_key: str) -> QueueItem | None:
        rows = self._read(f"{SELECT_ITEM} WHERE q.run_key = ?", (run_key,))
        return item_of(rows[0]) if rows else None

    def items(self) -> list[QueueItem]:
        return [item_of(r) for r in self._read(f"{SELECT_ITEM} ORDER BY q.enqueued_at, q.run_key")]

    def claim(self, run_key: str, owner: str, ttl_s: float) -> QueueItem | None:
        with self._tx() as cur:
            prev = cur.execute(
                """SELECT r.state, r.lease_owner, q.attempts FROM queue q JOIN runs r USING (run_key)
                   WHERE q.run_key = ?""",
                (run_key,),
            ).fetchone()
            if prev is None:  # not a queued run: nothing to claim
                return None
            if not self._transition(cur, run_key, "running", from_states=ACTIVE, take_lease=(owner, ttl_s)):
                return None
            now = self._clock()
            if prev["state"] == "running" and prev["lease_owner"] not in (None, owner):
                # The previous attempt's worker died or hung: its lease expired without a terminal state.
                # Record that attempt, so a kill never leaves a gap in the audit trail.
                dead, n = prev["lease_owner"], prev["attempts"]
                error = f"lease_expired: attempt {n} by {dead} ended without a result"
                self._insert_attempt(cur, run_key, "run", None, "failed", 0.0, None, error, False, owner)
            cur.execute(
                "UPDATE queue SET attempts = attempts + 1, progress_at = ? WHERE run_key = ?", (now, run_key)
            )
            row = cur.execute(f"{SELECT_ITEM} WHERE q.run_key = ?", (run_key,)).fetchone()
        return item_of(row)

    def renew(self, run_key: str, owner: str, ttl_s: float) -> bool:
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                f"""UPDATE runs SET lease_expires_at = ?, updated_at = ?
                    WHERE run_key = ? AND lease_owner = ? AND state NOT IN ({TERMINAL_SQL})""",
                (now + ttl_s, now, run_key, owner),
            )
            return cur.rowcount == 1

    def release(self, run_key: str, owner: str) -> None:
        with self._tx() as cur:
            cur.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL WHERE run_key = ? AND lease_owner = ?",
                (run_key, owner),
            )

    def progress(self, run_key: str) -> None:
        with self._tx() as cur:
            cur.execute("UPDATE queue SET progress_at = ? WHERE run_key = ?", (self._clock(), run_key))

    def finish(self, run_key: str, owner: str, state: str, error: str | None = None) -> bool:
        if state not in TERMINAL_STATES:
            raise ValueError(f"finish needs a terminal state, not {state!r}")
        with self._tx() as cur:
            done = self._transition(cur, run_key, state, from_states=("running",), holder=owner, error=error)
            if done and error:
                cur.execute("UPDATE queue SET last_error = ? WHERE run_key = ?", (error, run_key))
            return done

    def retry_later(self, run_key: str, owner: str, error: str, delay_s: float) -> bool:
        with self._tx() as cur:
            if not self._transition(
                cur, run_key, "queued", from_states=("running",), holder=owner, error=error
            ):
                return False
            cur.execute(
                "UPDATE queue SET last_error = ?, not_before = ? WHERE run_key = ?",
                (error, self._clock() + delay_s, run_key),
            )
            return True

    def exhausted(self, run_key: str) -> bool:
        rows = self._read("SELECT attempts >= max_attempts FROM queue WHERE run_key = ?", (run_key,))
        return bool(rows and rows[0][0])

    def cancel_superseded(
        self,
        repo: str,
        pr_number: int,
        adr_path: str | None,
        head_sha: str,
        reason: str,
        keep: Collection[str] = (),
    ) -> list[str]:
        where = "q.repo = ? AND q.pr_number = ? AND q.head_sha != '' AND q.head_sha != ?"
        params: list[Any] = [repo, pr_number, head_sha]
        if adr_path is not None:
            where += " AND q.adr_path = ?"
            params.append(adr_path)
        with self._tx() as cur:
            order = self._order_of(cur, repo, pr_number, head_sha)
            rows = cur.execute(
                f"""SELECT q.run_key FROM queue q JOIN runs r ON r.run_key = q.run_key
                    LEFT JOIN pr_heads h
                      ON h.repo = q.repo AND h.pr_number = q.pr_number AND h.head_sha = q.head_sha
                    WHERE {where} AND COALESCE(h.push_order, 0) < ?
                      AND r.state IN ('queued', 'running') ORDER BY q.run_key""",
                [*params, order],
            ).fetchall()
            keys = [str(r[0]) for r in rows if str(r[0]) not in keep and self._cancel(cur, str(r[0]), reason)]
        return keys

    def cancel(self, run_key: str, reason: str) -> bool:
        with self._tx() as cur:
            return self._cancel(cur, run_key, reason)

    # -- push order --------------------------------------------------------------------------------------
    def push_order(self, repo: str, pr_number: int, head_sha: str) -> int:
        with self._tx() as cur:
            return self._order_of(cur, repo, pr_number, head_sha)

    def _order_of(self, cur: sqlite3.Cursor, repo: str, pr_number: int, head_sha: str) -> int:
        row = cur.execute(
            "SELECT push_order FROM pr_heads WHERE repo = ? AND pr_number = ? AND head_sha = ?",
            (repo, pr_number, head_sha),
        ).fetchone()
        if row is not None:
            return int(row[0])
        return self._note_head(cur, repo, pr_number, head_sha, self._clock())

    def _note_head(self, cur: sqlite3.Cursor, repo: str, pr_number: int, head_sha: str, now: float) -> int:
        """The head arrived now: the next number (one sequence for every PR; BEGIN IMMEDIATE orders it)."""
        order = int(cur.execute("SELECT COALESCE(MAX(push_order), 0) + 1 FROM pr_heads").fetchone()[0])
        cur.execute(
            """INSERT INTO pr_heads (repo, pr_number, head_sha, push_order, seen_at) VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (repo, pr_number, head_sha) DO UPDATE SET push_order = excluded.push_order,
                   seen_at = excluded.seen_at""",
            (repo, pr_number, head_sha, order, now),
        )
        return order

    def _cancel(self, cur: sqlite3.Cursor, run_key: str, reason: str) -> bool:
        if not self._transition(cur, run_key, "cancelled", from_states=ACTIVE, error=reason):
            return False
        cur.execute("UPDATE queue SET cancel_reason = ? WHERE run_key = ?", (reason, run_key))
        return True

    def state(self, run_key: str) -> str | None:
        rows = self._read("SELECT state FROM runs WHERE run_key = ?", (run_key,))
        return str(rows[0][0]) if rows else None

    def watchdog(self, stall_after_s: float) -> list[str]:
        err = f"stalled_by_watchdog: no stage progress for {stall_after_s:.0f} s"
        with self._tx() as cur:
            rows = cur.execute(
                """SELECT q.run_key FROM queue q JOIN runs r ON r.run_key = q.run_key
                   WHERE r.state = 'running' AND COALESCE(q.progress_at, q.enqueued_at) < ?
                   ORDER BY q.run_key""",
                (self._clock() - stall_after_s,),
            ).fetchall()
            keys = []
            for r in rows:
                key = str(r[0])
                if self._transition(cur, key, "failed", from_states=("running",), error=err):
                    cur.execute(
                        "UPDATE queue SET stalled_by_watchdog = 1, last_error = ? WHERE run_key = ?",
                        (err, key),
                    )
                    keys.append(key)
        return keys

    # -- health ------------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """Reads only: one query (an unauthenticated request must not make the store write)."""
        try:
            return health_facts(self._read(HEALTH_SQL), self._clock(), True, None)
        except sqlite3.Error as exc:
            return health_facts([], self._clock(), False, str(exc))
