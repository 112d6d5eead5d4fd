"""The App's durable run queue and delivery log, in the same SQLite file as the checkpoint store.

Tables added next to `runs` / `checkpoints` / `attempts` of app/adapters/store.py (and sharing its
connection, lock and BEGIN IMMEDIATE transactions, so a delivery, its run rows and its queue rows are
written in one transaction):

- `deliveries`: one row per (hook id, X-GitHub-Delivery); the dedupe key of the webhook endpoint.
- `queue`: what a worker needs to execute a run (kind, installation, repo, PR, ADR, head SHA, spec),
  its bounded attempt counter and back-off, the last stage progress (the watchdog's clock) and the
  `stalled_by_watchdog` flag. State and lease stay on `runs` (one source of truth); the claim below is
  the same compare-and-set as SqliteStore.claim, plus the attempt counter, in one transaction.

Versioned separately from store.py's PRAGMA user_version (owned by the checkpoint store) in the
`queue_schema` table, so either side can migrate without renumbering the other.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from app.adapters.store import SqliteStore
from app.pipeline.queue import Accepted, Delivery, QueueItem, RunSpec

QUEUE_SCHEMA_VERSION = 1

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE deliveries (
            hook_id         TEXT NOT NULL,
            delivery_id     TEXT NOT NULL,
            event           TEXT NOT NULL,
            action          TEXT,
            installation_id INTEGER,
            repo            TEXT,
            received_at     REAL NOT NULL,
            body_sha256     TEXT NOT NULL,
            payload         TEXT NOT NULL,
            run_keys        TEXT NOT NULL DEFAULT '[]',
            duplicates      INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (hook_id, delivery_id)
        )""",
        "CREATE INDEX deliveries_by_guid ON deliveries (delivery_id)",
        """CREATE TABLE queue (
            run_key             TEXT PRIMARY KEY REFERENCES runs (run_key),
            kind                TEXT NOT NULL CHECK (kind IN ('plan', 'review')),
            installation_id     INTEGER,
            repo                TEXT NOT NULL,
            pr_number           INTEGER NOT NULL,
            adr_path            TEXT NOT NULL DEFAULT '',
            head_sha            TEXT NOT NULL DEFAULT '',
            spec                TEXT NOT NULL DEFAULT '{}',
            parent_key          TEXT,
            hook_id             TEXT,
            delivery_id         TEXT,
            enqueued_at         REAL NOT NULL,
            not_before          REAL NOT NULL,
            attempts            INTEGER NOT NULL DEFAULT 0,
            max_attempts        INTEGER NOT NULL DEFAULT 3,
            progress_at         REAL,
            last_error          TEXT,
            stalled_by_watchdog INTEGER NOT NULL DEFAULT 0,
            cancel_reason       TEXT
        )""",
        "CREATE INDEX queue_by_subject ON queue (repo, pr_number, adr_path)",
        "CREATE INDEX queue_by_due ON queue (not_before, enqueued_at)",
        "CREATE TABLE queue_health (id INTEGER PRIMARY KEY CHECK (id = 1), checked_at REAL NOT NULL)",
    ],
}

ACTIVE = ("queued", "running")


class QueueStore:
    """Queue operations over a SqliteStore's connection (share one SqliteStore per process)."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self._clock = store._clock
        self._migrate()

    # The checkpoint store's transaction helper: one connection, one lock, BEGIN IMMEDIATE.
    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Cursor]:
        with self.store._tx() as cur:
            yield cur

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self.store._lock:
            rows: list[sqlite3.Row] = self.store._conn.execute(sql, params).fetchall()
            return rows

    def _migrate(self) -> None:
        with self._tx() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS queue_schema (version INTEGER NOT NULL)")
            row = cur.execute("SELECT version FROM queue_schema").fetchone()
            version = int(row[0]) if row else 0
            if row is None:
                cur.execute("INSERT INTO queue_schema (version) VALUES (0)")
            if version > QUEUE_SCHEMA_VERSION:
                raise RuntimeError(
                    f"queue schema {version} is newer than this program ({QUEUE_SCHEMA_VERSION})"
                )
            for v in range(version + 1, QUEUE_SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[v]:
                    cur.execute(statement)
                cur.execute("UPDATE queue_schema SET version = ?", (v,))

    # -- webhook side --------------------------------------------------------------------------------
    def accept_delivery(self, delivery: Delivery, runs: Sequence[RunSpec]) -> Accepted:
        """Store the delivery and the runs it implies in one transaction; a repeat changes nothing."""
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
                cur.execute(
                    "UPDATE deliveries SET duplicates = duplicates + 1 WHERE hook_id = ? AND delivery_id = ?",
                    (delivery.hook_id, delivery.delivery_id),
                )
                row = cur.execute(
                    "SELECT run_keys FROM deliveries WHERE hook_id = ? AND delivery_id = ?",
                    (delivery.hook_id, delivery.delivery_id),
                ).fetchone()
                return Accepted(False, tuple(json.loads(row[0])), 0)
            new = self._enqueue(cur, runs, delivery, now)
            return Accepted(True, tuple(r.run_key for r in runs), new)

    def enqueue(self, runs: Sequence[RunSpec]) -> int:
        """Enqueue follow-up runs (a plan's reviews); existing run keys are left as they are."""
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
            cur.execute(
                "INSERT OR IGNORE INTO runs (run_key, meta, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (r.run_key, json.dumps(meta, sort_keys=True), now, now),
            )
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
                    json.dumps(dict(r.spec), sort_keys=True),
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
        """Which of these X-GitHub-Delivery values we have stored (any hook id)."""
        found: set[str] = set()
        chunk = 500
        for i in range(0, len(guids), chunk):
            part = list(guids[i : i + chunk])
            marks = ",".join("?" * len(part))
            rows = self._read(
                f"SELECT DISTINCT delivery_id FROM deliveries WHERE delivery_id IN ({marks})", part
            )
            found.update(str(r[0]) for r in rows)
        return found

    def delivery_payload(self, hook_id: str | None, delivery_id: str | None) -> str | None:
        """The stored raw body of a delivery (the plan stage parses it fully)."""
        rows = self._read(
            "SELECT payload FROM deliveries WHERE hook_id = ? AND delivery_id = ?", (hook_id, delivery_id)
        )
        return str(rows[0][0]) if rows else None

    def delivery_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM deliveries")[0][0])

    # -- worker side ---------------------------------------------------------------------------------
    def due(self, limit: int = 10) -> list[QueueItem]:
        """Runs a worker may try to claim: queued and due, or running with an expired lease. Plans first:
        they are cheap, and a plan for a newer head cancels the queued reviews it supersedes before
        anyone pays for them."""
        now = self._clock()
        rows = self._read(
            f"""{_SELECT_ITEM}
                WHERE r.state IN ('queued', 'running') AND q.not_before <= ?
                  AND (r.lease_owner IS NULL OR r.lease_expires_at <= ?)
                ORDER BY q.kind = 'plan' DESC, q.enqueued_at, q.run_key LIMIT ?""",
            (now, now, limit),
        )
        return [_item(r) for r in rows]

    def get(self, run_key: str) -> QueueItem | None:
        rows = self._read(f"{_SELECT_ITEM} WHERE q.run_key = ?", (run_key,))
        return _item(rows[0]) if rows else None

    def items(self) -> list[QueueItem]:
        return [_item(r) for r in self._read(f"{_SELECT_ITEM} ORDER BY q.enqueued_at, q.run_key")]

    def claim(self, run_key: str, owner: str, ttl_s: float) -> QueueItem | None:
        """Compare-and-set lease + attempt counter in one transaction; None if someone else holds it."""
        with self._tx() as cur:
            now = self._clock()
            prev = cur.execute(
                "SELECT state, lease_owner, lease_expires_at FROM runs WHERE run_key = ?", (run_key,)
            ).fetchone()
            cur.execute(
                """UPDATE runs SET state = 'running', lease_owner = ?, lease_expires_at = ?, updated_at = ?
                   WHERE run_key = ? AND state IN ('queued', 'running')
                     AND (lease_owner IS NULL OR lease_owner = ? OR lease_expires_at <= ?)""",
                (owner, now + ttl_s, now, run_key, owner, now),
            )
            if cur.rowcount != 1:
                return None
            if prev is not None and prev["state"] == "running" and prev["lease_owner"] not in (None, owner):
                # The previous attempt's worker died or hung: its lease expired without a terminal state.
                # Record that attempt, so a kill never leaves a gap in the audit trail.
                n = cur.execute("SELECT attempts FROM queue WHERE run_key = ?", (run_key,)).fetchone()
                self.store._insert_attempt(
                    cur,
                    run_key,
                    "run",
                    None,
                    "failed",
                    0.0,
                    None,
                    f"lease_expired: attempt {n[0] if n else '?'} by {prev['lease_owner']} ended without a result",
                    False,
                    owner,
                )
            cur.execute(
                "UPDATE queue SET attempts = attempts + 1, progress_at = ? WHERE run_key = ?", (now, run_key)
            )
            row = cur.execute(f"{_SELECT_ITEM} WHERE q.run_key = ?", (run_key,)).fetchone()
        return _item(row) if row else None

    def progress(self, run_key: str) -> None:
        """A stage finished (executed or reused): the watchdog's clock restarts."""
        with self._tx() as cur:
            cur.execute("UPDATE queue SET progress_at = ? WHERE run_key = ?", (self._clock(), run_key))

    def finish(self, run_key: str, owner: str, state: str, error: str | None = None) -> bool:
        """Terminal state, only while `owner` holds the lease of a running run (not over a cancel)."""
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                """UPDATE runs SET state = ?, error = ?, updated_at = ?, finished_at = ?, lease_owner = NULL,
                       lease_expires_at = NULL
                   WHERE run_key = ? AND lease_owner = ? AND state = 'running'""",
                (state, error, now, now, run_key, owner),
            )
            done = cur.rowcount == 1
            if done and error:
                cur.execute("UPDATE queue SET last_error = ? WHERE run_key = ?", (error, run_key))
            return done

    def retry_later(self, run_key: str, owner: str, error: str, delay_s: float) -> bool:
        """Give the run back to the queue after a failed attempt (attempts left)."""
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                """UPDATE runs SET state = 'queued', error = ?, updated_at = ?, lease_owner = NULL,
                       lease_expires_at = NULL
                   WHERE run_key = ? AND lease_owner = ? AND state = 'running'""",
                (error, now, run_key, owner),
            )
            if cur.rowcount != 1:
                return False
            cur.execute(
                "UPDATE queue SET last_error = ?, not_before = ? WHERE run_key = ?",
                (error, now + delay_s, run_key),
            )
            return True

    def exhausted(self, run_key: str) -> bool:
        """True when a run's attempts are used up (a crashed worker's attempt counts too)."""
        rows = self._read("SELECT attempts >= max_attempts FROM queue WHERE run_key = ?", (run_key,))
        return bool(rows and rows[0][0])

    def cancel_superseded(
        self, repo: str, pr_number: int, adr_path: str | None, head_sha: str, reason: str
    ) -> list[str]:
        """Cancel queued or running runs of the same PR (and ADR, if given) at another head SHA.

        A running one notices at its next stage boundary (it checks its state) and stops.
        """
        with self._tx() as cur:
            now = self._clock()
            where = "q.repo = ? AND q.pr_number = ? AND q.head_sha != '' AND q.head_sha != ?"
            params: list[Any] = [repo, pr_number, head_sha]
            if adr_path is not None:
                where += " AND q.adr_path = ?"
                params.append(adr_path)
            rows = cur.execute(
                f"""SELECT q.run_key FROM queue q JOIN runs r ON r.run_key = q.run_key
                    WHERE {where} AND r.state IN ('queued', 'running')""",
                params,
            ).fetchall()
            keys = [str(r[0]) for r in rows]
            for k in keys:
                cur.execute(
                    """UPDATE runs SET state = 'cancelled', error = ?, updated_at = ?, finished_at = ?,
                           lease_owner = NULL, lease_expires_at = NULL WHERE run_key = ?""",
                    (reason, now, now, k),
                )
                cur.execute("UPDATE queue SET cancel_reason = ? WHERE run_key = ?", (reason, k))
            return keys

    def cancel(self, run_key: str, reason: str) -> bool:
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                """UPDATE runs SET state = 'cancelled', error = ?, updated_at = ?, finished_at = ?,
                       lease_owner = NULL, lease_expires_at = NULL
                   WHERE run_key = ? AND state IN ('queued', 'running')""",
                (reason, now, now, run_key),
            )
            if cur.rowcount != 1:
                return False
            cur.execute("UPDATE queue SET cancel_reason = ? WHERE run_key = ?", (reason, run_key))
            return True

    def state(self, run_key: str) -> str | None:
        rows = self._read("SELECT state FROM runs WHERE run_key = ?", (run_key,))
        return str(rows[0][0]) if rows else None

    def watchdog(self, stall_after_s: float) -> list[str]:
        """Running runs without stage progress for stall_after_s -> failed, flagged stalled_by_watchdog.

        Progress is a stage boundary (not a lease renewal), so a hung worker that keeps its lease alive
        is caught too. Queued runs are not touched: waiting in a backlog is not a stall.
        """
        with self._tx() as cur:
            now = self._clock()
            rows = cur.execute(
                """SELECT q.run_key FROM queue q JOIN runs r ON r.run_key = q.run_key
                   WHERE r.state = 'running' AND COALESCE(q.progress_at, q.enqueued_at) < ?""",
                (now - stall_after_s,),
            ).fetchall()
            keys = [str(r[0]) for r in rows]
            err = f"stalled_by_watchdog: no stage progress for {stall_after_s:.0f} s"
            for k in keys:
                cur.execute(
                    """UPDATE runs SET state = 'failed', error = ?, updated_at = ?, finished_at = ?,
                           lease_owner = NULL, lease_expires_at = NULL WHERE run_key = ?""",
                    (err, now, now, k),
                )
                cur.execute(
                    "UPDATE queue SET stalled_by_watchdog = 1, last_error = ? WHERE run_key = ?", (err, k)
                )
            return keys

    # -- health ----------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """Store writable (a real write transaction), queue depth, oldest queued run's age."""
        now = self._clock()
        writable, error = True, None
        try:
            with self._tx() as cur:
                cur.execute("INSERT OR REPLACE INTO queue_health (id, checked_at) VALUES (1, ?)", (now,))
        except sqlite3.Error as exc:
            writable, error = False, str(exc)
        rows = self._read(
            """SELECT r.state, COUNT(*), MIN(q.enqueued_at) FROM queue q JOIN runs r ON r.run_key = q.run_key
               WHERE r.state IN ('queued', 'running') GROUP BY r.state"""
        )
        by_state = {str(r[0]): (int(r[1]), r[2]) for r in rows}
        queued, oldest = by_state.get("queued", (0, None))
        out: dict[str, Any] = {
            "store_writable": writable,
            "queue_depth": queued,
            "running": by_state.get("running", (0, None))[0],
            "oldest_queued_age_s": round(now - oldest, 3) if oldest is not None else None,
        }
        if error:
            out["store_error"] = error
        return out


_SELECT_ITEM = """SELECT q.*, r.state AS state, r.lease_owner AS lease_owner,
       r.lease_expires_at AS lease_expires_at, r.error AS error
  FROM queue q JOIN runs r ON r.run_key = q.run_key"""


def _item(r: sqlite3.Row) -> QueueItem:
    return QueueItem(
        run_key=r["run_key"],
        kind=r["kind"],
        state=r["state"],
        installation_id=r["installation_id"],
        repo=r["repo"],
        pr_number=int(r["pr_number"]),
        adr_path=r["adr_path"],
        head_sha=r["head_sha"],
        spec=json.loads(r["spec"] or "{}"),
        parent_key=r["parent_key"],
        hook_id=r["hook_id"],
        delivery_id=r["delivery_id"],
        enqueued_at=float(r["enqueued_at"]),
        attempts=int(r["attempts"]),
        max_attempts=int(r["max_attempts"]),
        lease_owner=r["lease_owner"],
        lease_expires_at=r["lease_expires_at"],
        progress_at=r["progress_at"],
        last_error=r["last_error"],
        stalled_by_watchdog=bool(r["stalled_by_watchdog"]),
        cancel_reason=r["cancel_reason"],
        error=r["error"],
    )
