"""Deliveries, the App's queue and the push order (the RunQueue part of the port), written once for
both engines over their dialect (state_sql.Dialect).

`deliveries` is the webhook's dedupe key; `queue` holds what a worker needs to execute a run, its
bounded attempt counter, back-off, last stage progress (the watchdog's clock) and the
`stalled_by_watchdog` flag. State and lease stay on `runs`; a delivery, its run rows and its queue
rows are written in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from adr_review.adapters.state_common import (
    ACTIVE,
    HEALTH_SQL,
    SELECT_ITEM,
    TERMINAL_SQL,
    health_facts,
    item_of,
    payload_json,
)
from adr_review.adapters.state_sql import SqlTables
from adr_review.pipeline.ports import InfrastructureError
from adr_review.pipeline.queue import Accepted, Delivery, QueueItem, RunSpec
from adr_review.pipeline.state_ports import TERMINAL_STATES

GUID_CHUNK = 500  # placeholders per IN (...): under SQLite's oldest limit of 999


class QueueTables(SqlTables):
    # -- webhook side ------------------------------------------------------------------------------------
    def accept_delivery(self, delivery: Delivery, runs: Sequence[RunSpec]) -> Accepted:
        m = self._sql.mark
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                f"""INSERT INTO deliveries (hook_id, delivery_id, event, action, installation_id,
                       repo, received_at, body_sha256, payload, run_keys)
                    VALUES ({self._sql.marks(10)}) ON CONFLICT (hook_id, delivery_id) DO NOTHING""",
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
                where = f"WHERE hook_id = {m} AND delivery_id = {m}"
                cur.execute(f"UPDATE deliveries SET duplicates = duplicates + 1 {where}", key)
                row = cur.execute(f"SELECT run_keys FROM deliveries {where}", key).fetchone()
                return Accepted(False, tuple(json.loads(row["run_keys"])), 0)
            new = self._enqueue(cur, runs, delivery, now)
            for r in runs:
                if r.kind == "plan" and r.head_sha:  # a push (or an open) of this head arrived now
                    self._note_head(cur, r.repo, r.pr_number, r.head_sha, now)
            return Accepted(True, tuple(r.run_key for r in runs), new)

    def enqueue(self, runs: Sequence[RunSpec]) -> int:
        with self._tx() as cur:
            return self._enqueue(cur, runs, None, self._clock())

    def _enqueue(self, cur: Any, runs: Sequence[RunSpec], d: Delivery | None, now: float) -> int:
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
                f"""INSERT INTO queue (run_key, kind, installation_id, repo, pr_number, adr_path, head_sha,
                       spec, parent_key, hook_id, delivery_id, enqueued_at, not_before, max_attempts)
                    VALUES ({self._sql.marks(14)}) ON CONFLICT (run_key) DO NOTHING""",
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
        for i in range(0, len(guids), GUID_CHUNK):
            part = list(guids[i : i + GUID_CHUNK])
            rows = self._read(
                f"SELECT DISTINCT delivery_id FROM deliveries WHERE delivery_id IN ({self._sql.marks(len(part))})",
                part,
            )
            found.update(str(r["delivery_id"]) for r in rows)
        return found

    def delivery_payload(self, hook_id: str | None, delivery_id: str | None) -> str | None:
        m = self._sql.mark
        rows = self._read(
            f"SELECT payload FROM deliveries WHERE hook_id = {m} AND delivery_id = {m}",
            (hook_id, delivery_id),
        )
        return str(rows[0]["payload"]) if rows else None

    def delivery_count(self) -> int:
        return int(self._read("SELECT COUNT(*) AS n FROM deliveries")[0]["n"])

    # -- worker side -------------------------------------------------------------------------------------
    def due(self, limit: int = 10) -> list[QueueItem]:
        """Plans first: they are cheap, and a plan for a newer head cancels the queued reviews it
        supersedes before anyone pays for them."""
        now, m = self._clock(), self._sql.mark
        rows = self._read(
            f"""{SELECT_ITEM}
                WHERE r.state IN ('queued', 'running') AND q.not_before <= {m}
                  AND (r.lease_owner IS NULL OR r.lease_expires_at <= {m})
                ORDER BY q.kind = 'plan' DESC, q.enqueued_at, q.run_key LIMIT {m}""",
            (now, now, limit),
        )
        return [item_of(r) for r in rows]

    def item(self, run_key: str) -> QueueItem | None:
        rows = self._read(f"{SELECT_ITEM} WHERE q.run_key = {self._sql.mark}", (run_key,))
        return item_of(rows[0]) if rows else None

    def items(self) -> list[QueueItem]:
        return [item_of(r) for r in self._read(f"{SELECT_ITEM} ORDER BY q.enqueued_at, q.run_key")]

    def claim(self, run_key: str, owner: str, ttl_s: float) -> QueueItem | None:
        """Takes the run's row first (the dialect's claim lock): on PostgreSQL a worker that finds it
        taken by another claimer (or by a write of the run's holder) gives up at once instead of
        queueing behind it."""
        m = self._sql.mark
        with self._tx() as cur:
            prev = cur.execute(
                f"""SELECT r.state, r.lease_owner, q.attempts FROM runs r JOIN queue q USING (run_key)
                    WHERE r.run_key = {m} {self._sql.claim_lock}""",
                (run_key,),
            ).fetchone()
            if prev is None:  # not a queued run, or someone holds its row right now
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
                f"UPDATE queue SET attempts = attempts + 1, progress_at = {m} WHERE run_key = {m}",
                (now, run_key),
            )
            row = cur.execute(f"{SELECT_ITEM} WHERE q.run_key = {m}", (run_key,)).fetchone()
        return item_of(row)

    def renew(self, run_key: str, owner: str, ttl_s: float) -> bool:
        m = self._sql.mark
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                f"""UPDATE runs SET lease_expires_at = {m}, updated_at = {m}
                    WHERE run_key = {m} AND lease_owner = {m} AND state NOT IN ({TERMINAL_SQL})""",
                (now + ttl_s, now, run_key, owner),
            )
            return bool(cur.rowcount == 1)

    def release(self, run_key: str, owner: str) -> None:
        m = self._sql.mark
        with self._tx() as cur:
            cur.execute(
                f"""UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL
                    WHERE run_key = {m} AND lease_owner = {m}""",
                (run_key, owner),
            )

    def progress(self, run_key: str) -> None:
        m = self._sql.mark
        with self._tx() as cur:
            cur.execute(f"UPDATE queue SET progress_at = {m} WHERE run_key = {m}", (self._clock(), run_key))

    def finish(self, run_key: str, owner: str, state: str, error: str | None = None) -> bool:
        if state not in TERMINAL_STATES:
            raise ValueError(f"finish needs a terminal state, not {state!r}")
        m = self._sql.mark
        with self._tx() as cur:
            done = self._transition(cur, run_key, state, from_states=("running",), holder=owner, error=error)
            if done and error:
                cur.execute(f"UPDATE queue SET last_error = {m} WHERE run_key = {m}", (error, run_key))
            return done

    def retry_later(self, run_key: str, owner: str, error: str, delay_s: float) -> bool:
        m = self._sql.mark
        with self._tx() as cur:
            if not self._transition(
                cur, run_key, "queued", from_states=("running",), holder=owner, error=error
            ):
                return False
            cur.execute(
                f"UPDATE queue SET last_error = {m}, not_before = {m} WHERE run_key = {m}",
                (error, self._clock() + delay_s, run_key),
            )
            return True

    def exhausted(self, run_key: str) -> bool:
        rows = self._read(
            f"SELECT attempts >= max_attempts AS done FROM queue WHERE run_key = {self._sql.mark}", (run_key,)
        )
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
        m = self._sql.mark
        where = f"q.repo = {m} AND q.pr_number = {m} AND q.head_sha != '' AND q.head_sha != {m}"
        params: list[Any] = [repo, pr_number, head_sha]
        if adr_path is not None:
            where += f" AND q.adr_path = {m}"
            params.append(adr_path)
        with self._tx() as cur:
            order = self._order_of(cur, repo, pr_number, head_sha)
            rows = cur.execute(
                f"""SELECT q.run_key FROM queue q JOIN runs r ON r.run_key = q.run_key
                    LEFT JOIN pr_heads h
                      ON h.repo = q.repo AND h.pr_number = q.pr_number AND h.head_sha = q.head_sha
                    WHERE {where} AND COALESCE(h.push_order, 0) < {m}
                      AND r.state IN ('queued', 'running') ORDER BY q.run_key""",
                [*params, order],
            ).fetchall()
            keys = [str(r["run_key"]) for r in rows]
            return [k for k in keys if k not in keep and self._cancel(cur, k, reason)]

    def cancel(self, run_key: str, reason: str) -> bool:
        with self._tx() as cur:
            return self._cancel(cur, run_key, reason)

    def _cancel(self, cur: Any, run_key: str, reason: str) -> bool:
        if not self._transition(cur, run_key, "cancelled", from_states=ACTIVE, error=reason):
            return False
        m = self._sql.mark
        cur.execute(f"UPDATE queue SET cancel_reason = {m} WHERE run_key = {m}", (reason, run_key))
        return True

    def state(self, run_key: str) -> str | None:
        rows = self._read(f"SELECT state FROM runs WHERE run_key = {self._sql.mark}", (run_key,))
        return str(rows[0]["state"]) if rows else None

    def watchdog(self, stall_after_s: float) -> list[str]:
        err = f"stalled_by_watchdog: no stage progress for {stall_after_s:.0f} s"
        m = self._sql.mark
        with self._tx() as cur:
            rows = cur.execute(
                f"""SELECT q.run_key FROM queue q JOIN runs r ON r.run_key = q.run_key
                    WHERE r.state = 'running' AND COALESCE(q.progress_at, q.enqueued_at) < {m}
                    ORDER BY q.run_key""",
                (self._clock() - stall_after_s,),
            ).fetchall()
            keys = []
            for r in rows:
                key = str(r["run_key"])
                if self._transition(cur, key, "failed", from_states=("running",), error=err):
                    cur.execute(
                        f"UPDATE queue SET stalled_by_watchdog = 1, last_error = {m} WHERE run_key = {m}",
                        (err, key),
                    )
                    keys.append(key)
        return keys

    # -- push order --------------------------------------------------------------------------------------
    def push_order(self, repo: str, pr_number: int, head_sha: str) -> int:
        with self._tx() as cur:
            return self._order_of(cur, repo, pr_number, head_sha)

    def _order_of(self, cur: Any, repo: str, pr_number: int, head_sha: str) -> int:
        """The head's number; a head not seen before gets the next one (it arrived now)."""
        return self._number_head(cur, repo, pr_number, head_sha, self._clock(), renumber=False)

    def _note_head(self, cur: Any, repo: str, pr_number: int, head_sha: str, now: float) -> int:
        """The head arrived now: the next number, even if it was seen before (one sequence for every PR)."""
        return self._number_head(cur, repo, pr_number, head_sha, now, renumber=True)

    def _number_head(
        self, cur: Any, repo: str, pr_number: int, head_sha: str, now: float, *, renumber: bool
    ) -> int:
        m = self._sql.mark
        on_conflict = (
            "DO UPDATE SET push_order = excluded.push_order, seen_at = excluded.seen_at"
            if renumber
            else "DO NOTHING"
        )
        cur.execute(
            f"""INSERT INTO pr_heads (repo, pr_number, head_sha, push_order, seen_at)
                VALUES ({m}, {m}, {m}, {self._sql.next_push_order}, {m})
                ON CONFLICT (repo, pr_number, head_sha) {on_conflict}""",
            (repo, pr_number, head_sha, now),
        )
        row = cur.execute(
            f"SELECT push_order FROM pr_heads WHERE repo = {m} AND pr_number = {m} AND head_sha = {m}",
            (repo, pr_number, head_sha),
        ).fetchone()
        return int(row["push_order"])

    # -- health ------------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """Reads only: one query (an unauthenticated request must not make the store write)."""
        try:
            return health_facts(self._read(HEALTH_SQL), self._clock(), True, None)
        except (self._sql.error, InfrastructureError) as exc:
            return health_facts([], self._clock(), False, str(exc))
