"""Checkpoint stores: MemoryStore (one process, tests, local runs) and SqliteStore (a file, WAL mode).

Both implement app.pipeline.ports.CheckpointStore with the same semantics: a checkpoint is written
once per (run, stage) and the attempt that wrote it is the authoritative one; every executed, skipped
or failed attempt is a row; runs carry a lease (owner + expiry, compare-and-set) and a state.

SqliteStore is safe across threads (one connection behind a lock) and processes (WAL, busy_timeout,
BEGIN IMMEDIATE around every read-modify-write). The schema is versioned with PRAGMA user_version;
a GitHub App with several workers can share one file on one host, and the same tables map onto
Postgres when it needs several hosts (claim = UPDATE ... WHERE lease is free, as here).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.core.results import Usage
from app.pipeline.ports import (
    ATTEMPT_OUTCOMES,
    RUN_STATES,
    TERMINAL_STATES,
    AttemptInfo,
    AttemptRecord,
    RunRecord,
)

Clock = Callable[[], float]


class StoreError(RuntimeError):
    pass


def _check_state(state: str) -> None:
    if state not in RUN_STATES:
        raise ValueError(f"unknown run state {state!r}; expected one of {RUN_STATES}")


def _check_outcome(outcome: str) -> None:
    if outcome not in ATTEMPT_OUTCOMES:
        raise ValueError(f"unknown attempt outcome {outcome!r}; expected one of {ATTEMPT_OUTCOMES}")


def _payload_json(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# --------------------------------------------------------------------------------------------------


@dataclass
class _MemRun:
    record: RunRecord
    checkpoints: dict[str, tuple[int, str]]  # stage -> (seq, payload json)
    attempts: list[AttemptRecord]


class MemoryStore:
    """In-process store. Payloads are kept as JSON text so a reader never shares mutable state."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._runs: dict[str, _MemRun] = {}

    def _run(self, run_key: str) -> _MemRun:
        run = self._runs.get(run_key)
        if run is None:
            now = self._clock()
            run = _MemRun(RunRecord(run_key, "queued", {}, None, None, None, now, now, None), {}, [])
            self._runs[run_key] = run
        return run

    def _touch(self, run: _MemRun) -> None:
        run.record = replace(run.record, updated_at=self._clock())

    def get(self, run_key: str, stage: str) -> dict[str, Any] | None:
        with self._lock:
            run = self._runs.get(run_key)
            if run is None or stage not in run.checkpoints:
                return None
            result: dict[str, Any] = json.loads(run.checkpoints[stage][1])
            return result

    def put(
        self, run_key: str, stage: str, seq: int | None, payload: Mapping[str, Any], info: AttemptInfo
    ) -> bool:
        text = _payload_json(payload)
        with self._lock:
            run = self._run(run_key)
            won = stage not in run.checkpoints
            if won:
                if seq is None:
                    seq = 1 + max((s for s, _ in run.checkpoints.values()), default=0)
                run.checkpoints[stage] = (seq, text)
            self._append(
                run, stage, info.attempt, "executed", info.duration_s, info.usage, None, won, info.owner
            )
            return won

    def _append(
        self,
        run: _MemRun,
        stage: str,
        attempt: int | None,
        outcome: str,
        duration_s: float,
        usage: Usage | None,
        error: str | None,
        authoritative: bool,
        owner: str | None,
    ) -> AttemptRecord:
        _check_outcome(outcome)
        if attempt is None:
            attempt = 1 + max((a.attempt for a in run.attempts if a.stage == stage), default=0)
        rec = AttemptRecord(
            run.record.run_key,
            stage,
            attempt,
            outcome,
            duration_s,
            usage or Usage(),
            error,
            authoritative,
            owner,
            self._clock(),
        )
        run.attempts.append(rec)
        self._touch(run)
        return rec

    def record_attempt(
        self,
        run_key: str,
        stage: str,
        attempt: int | None,
        outcome: str,
        duration_s: float = 0.0,
        usage: Usage | None = None,
        error: str | None = None,
        *,
        owner: str | None = None,
    ) -> AttemptRecord:
        with self._lock:
            return self._append(
                self._run(run_key), stage, attempt, outcome, duration_s, usage, error, False, owner
            )

    def attempts(self, run_key: str) -> list[AttemptRecord]:
        with self._lock:
            run = self._runs.get(run_key)
            return list(run.attempts) if run else []

    def checkpoints(self, run_key: str) -> list[tuple[int, str]]:
        with self._lock:
            run = self._runs.get(run_key)
            if run is None:
                return []
            return sorted((seq, stage) for stage, (seq, _) in run.checkpoints.items())

    def ensure_run(self, run_key: str, meta: Mapping[str, Any]) -> RunRecord:
        with self._lock:
            existed = run_key in self._runs
            run = self._run(run_key)
            if not existed:
                run.record = replace(run.record, meta=dict(meta))
            return run.record

    def get_run(self, run_key: str) -> RunRecord | None:
        with self._lock:
            run = self._runs.get(run_key)
            return run.record if run else None

    def set_state(self, run_key: str, state: str, error: str | None = None) -> None:
        _check_state(state)
        with self._lock:
            run = self._run(run_key)
            now = self._clock()
            rec = replace(run.record, state=state, error=error, updated_at=now)
            if state in TERMINAL_STATES:
                rec = replace(rec, finished_at=now, lease_owner=None, lease_expires_at=None)
            run.record = rec

    def claim(self, run_key: str, owner: str, ttl_s: float) -> bool:
        with self._lock:
            run = self._run(run_key)
            rec, now = run.record, self._clock()
            if rec.state in TERMINAL_STATES:
                return False
            free = rec.lease_owner is None or rec.lease_owner == owner or (rec.lease_expires_at or 0) <= now
            if not free:
                return False
            run.record = replace(
                rec, state="running", lease_owner=owner, lease_expires_at=now + ttl_s, updated_at=now
            )
            return True

    def renew(self, run_key: str, owner: str, ttl_s: float) -> bool:
        with self._lock:
            run = self._runs.get(run_key)
            if run is None or run.record.lease_owner != owner or run.record.state in TERMINAL_STATES:
                return False
            now = self._clock()
            run.record = replace(run.record, lease_expires_at=now + ttl_s, updated_at=now)
            return True

    def release(self, run_key: str, owner: str) -> None:
        with self._lock:
            run = self._runs.get(run_key)
            if run is not None and run.record.lease_owner == owner:
                run.record = replace(run.record, lease_owner=None, lease_expires_at=None)

    def mark_stalled(self, no_progress_s: float) -> list[str]:
        with self._lock:
            limit = self._clock() - no_progress_s
            stalled = [
                k
                for k, r in self._runs.items()
                if r.record.state in ("queued", "running") and r.record.updated_at < limit
            ]
            for k in stalled:
                self.set_state(k, "stalled", f"no progress for {no_progress_s:.0f} s")
            return stalled


# --------------------------------------------------------------------------------------------------

SCHEMA_VERSION = 1

_STATES_SQL = ",".join(f"'{s}'" for s in RUN_STATES)
_OUTCOMES_SQL = ",".join(f"'{s}'" for s in ATTEMPT_OUTCOMES)
_TERMINAL_SQL = ",".join(f"'{s}'" for s in sorted(TERMINAL_STATES))

_MIGRATIONS: dict[int, str] = {
    1: f"""
CREATE TABLE runs (
    run_key          TEXT PRIMARY KEY,
    state            TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ({_STATES_SQL})),
    meta             TEXT NOT NULL DEFAULT '{{}}',
    error            TEXT,
    lease_owner      TEXT,
    lease_expires_at REAL,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL,
    finished_at      REAL
);
CREATE INDEX runs_by_state ON runs (state, updated_at);

CREATE TABLE checkpoints (
    run_key     TEXT NOT NULL REFERENCES runs (run_key),
    stage       TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    payload     TEXT NOT NULL,
    created_at  REAL NOT NULL,
    PRIMARY KEY (run_key, stage)
);

CREATE TABLE attempts (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key            TEXT NOT NULL REFERENCES runs (run_key),
    stage              TEXT NOT NULL,
    attempt            INTEGER NOT NULL,
    outcome            TEXT NOT NULL CHECK (outcome IN ({_OUTCOMES_SQL})),
    authoritative      INTEGER NOT NULL DEFAULT 0,
    duration_s         REAL NOT NULL DEFAULT 0,
    model              TEXT NOT NULL DEFAULT '',
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0,
    llm_calls          INTEGER NOT NULL DEFAULT 0,
    error              TEXT,
    owner              TEXT,
    created_at         REAL NOT NULL,
    UNIQUE (run_key, stage, attempt)
);
CREATE INDEX attempts_by_run ON attempts (run_key, id);
-- at most one authoritative attempt per stage: the one whose result is the checkpoint
CREATE UNIQUE INDEX attempts_one_authoritative ON attempts (run_key, stage) WHERE authoritative = 1;
""",
}


class SqliteStore:
    """A SQLite file in WAL mode; one connection per instance behind a lock (threads), BEGIN IMMEDIATE
    for every write (processes). Open one instance per process."""

    def __init__(self, path: str | Path, *, clock: Clock = time.time, busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the store {self.path}: {exc}") from exc
        try:
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: cannot enable WAL mode (got {mode})")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.Error as exc:  # e.g. "file is not a database": say which file
            self._conn.close()
            raise StoreError(f"cannot open the store {self.path}: {exc}") from exc
        except StoreError:
            self._conn.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        with self._tx() as cur:
            version = int(cur.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: schema version {version} is newer than this program ({SCHEMA_VERSION})"
                )
            for v in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _split_sql(_MIGRATIONS[v]):
                    cur.execute(statement)
                cur.execute(f"PRAGMA user_version = {v}")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Cursor]:
        """BEGIN IMMEDIATE: take the write lock up front so read-then-write cannot interleave."""
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")
            finally:
                cur.close()

    def _ensure_row(self, cur: sqlite3.Cursor, run_key: str, meta: Mapping[str, Any] | None = None) -> None:
        now = self._clock()
        cur.execute(
            "INSERT OR IGNORE INTO runs (run_key, meta, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (run_key, _payload_json(meta or {}), now, now),
        )

    def _insert_attempt(
        self,
        cur: sqlite3.Cursor,
        run_key: str,
        stage: str,
        attempt: int | None,
        outcome: str,
        duration_s: float,
        usage: Usage | None,
        error: str | None,
        authoritative: bool,
        owner: str | None,
    ) -> AttemptRecord:
        _check_outcome(outcome)
        u = usage or Usage()
        if attempt is None:
            row = cur.execute(
                "SELECT COALESCE(MAX(attempt), 0) + 1 FROM attempts WHERE run_key = ? AND stage = ?",
                (run_key, stage),
            ).fetchone()
            attempt = int(row[0])
        now = self._clock()
        cur.execute(
            """INSERT INTO attempts (run_key, stage, attempt, outcome, authoritative, duration_s, model,
                   input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, llm_calls,
                   error, owner, created_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                run_key,
                stage,
                attempt,
                outcome,
                int(authoritative),
                duration_s,
                u.model,
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
                u.cost_usd,
                u.calls,
                error,
                owner,
                now,
            ),
        )
        cur.execute("UPDATE runs SET updated_at = ? WHERE run_key = ?", (now, run_key))
        return AttemptRecord(
            run_key, stage, attempt, outcome, duration_s, u, error, authoritative, owner, now
        )

    def get(self, run_key: str, stage: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT payload FROM checkpoints WHERE run_key = ? AND stage = ?", (run_key, stage)
            ).fetchone()
        if row is None:
            return None
        result: dict[str, Any] = json.loads(row[0])
        return result

    def put(
        self, run_key: str, stage: str, seq: int | None, payload: Mapping[str, Any], info: AttemptInfo
    ) -> bool:
        text = _payload_json(payload)
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            if seq is None:
                seq = int(
                    cur.execute(
                        "SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE run_key = ?", (run_key,)
                    ).fetchone()[0]
                )
            cur.execute(
                "INSERT OR IGNORE INTO checkpoints (run_key, stage, seq, payload, created_at) VALUES (?, ?, ?, ?, ?)",
                (run_key, stage, seq, text, self._clock()),
            )
            won = cur.rowcount == 1
            self._insert_attempt(
                cur,
                run_key,
                stage,
                info.attempt,
                "executed",
                info.duration_s,
                info.usage,
                None,
                won,
                info.owner,
            )
            return won

    def record_attempt(
        self,
        run_key: str,
        stage: str,
        attempt: int | None,
        outcome: str,
        duration_s: float = 0.0,
        usage: Usage | None = None,
        error: str | None = None,
        *,
        owner: str | None = None,
    ) -> AttemptRecord:
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            return self._insert_attempt(
                cur, run_key, stage, attempt, outcome, duration_s, usage, error, False, owner
            )

    def attempts(self, run_key: str) -> list[AttemptRecord]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT * FROM attempts WHERE run_key = ? ORDER BY id", (run_key,)
            ).fetchall()
        return [
            AttemptRecord(
                run_key=r["run_key"],
                stage=r["stage"],
                attempt=r["attempt"],
                outcome=r["outcome"],
                duration_s=r["duration_s"],
                usage=Usage(
                    model=r["model"],
                    input_tokens=r["input_tokens"],
                    output_tokens=r["output_tokens"],
                    cache_read_tokens=r["cache_read_tokens"],
                    cache_write_tokens=r["cache_write_tokens"],
                    cost_usd=r["cost_usd"],
                    calls=r["llm_calls"],
                ),
                error=r["error"],
                authoritative=bool(r["authoritative"]),
                owner=r["owner"],
                at=r["created_at"],
            )
            for r in rows
        ]

    def checkpoints(self, run_key: str) -> list[tuple[int, str]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, stage FROM checkpoints WHERE run_key = ? ORDER BY seq, stage", (run_key,)
            ).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]

    def ensure_run(self, run_key: str, meta: Mapping[str, Any]) -> RunRecord:
        with self._tx() as cur:
            self._ensure_row(cur, run_key, meta)
        run = self.get_run(run_key)
        assert run is not None
        return run

    def get_run(self, run_key: str) -> RunRecord | None:
        with self._lock:
            r = self._conn.execute("SELECT * FROM runs WHERE run_key = ?", (run_key,)).fetchone()
        if r is None:
            return None
        return RunRecord(
            run_key=r["run_key"],
            state=r["state"],
            meta=json.loads(r["meta"]),
            error=r["error"],
            lease_owner=r["lease_owner"],
            lease_expires_at=r["lease_expires_at"],
            created_at=r["created_at"],
            updated_at=r["updated_at"],
            finished_at=r["finished_at"],
        )

    def set_state(self, run_key: str, state: str, error: str | None = None) -> None:
        _check_state(state)
        terminal = state in TERMINAL_STATES
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            now = self._clock()
            if terminal:
                cur.execute(
                    """UPDATE runs SET state = ?, error = ?, updated_at = ?, finished_at = ?,
                           lease_owner = NULL, lease_expires_at = NULL WHERE run_key = ?""",
                    (state, error, now, now, run_key),
                )
            else:
                cur.execute(
                    "UPDATE runs SET state = ?, error = ?, updated_at = ?, finished_at = NULL WHERE run_key = ?",
                    (state, error, now, run_key),
                )

    def claim(self, run_key: str, owner: str, ttl_s: float) -> bool:
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            now = self._clock()
            cur.execute(
                f"""UPDATE runs SET state = 'running', lease_owner = ?, lease_expires_at = ?, updated_at = ?
                    WHERE run_key = ? AND state NOT IN ({_TERMINAL_SQL})
                      AND (lease_owner IS NULL OR lease_owner = ? OR lease_expires_at <= ?)""",
                (owner, now + ttl_s, now, run_key, owner, now),
            )
            return cur.rowcount == 1

    def renew(self, run_key: str, owner: str, ttl_s: float) -> bool:
        with self._tx() as cur:
            now = self._clock()
            cur.execute(
                f"""UPDATE runs SET lease_expires_at = ?, updated_at = ?
                    WHERE run_key = ? AND lease_owner = ? AND state NOT IN ({_TERMINAL_SQL})""",
                (now + ttl_s, now, run_key, owner),
            )
            return cur.rowcount == 1

    def release(self, run_key: str, owner: str) -> None:
        with self._tx() as cur:
            cur.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL WHERE run_key = ? AND lease_owner = ?",
                (run_key, owner),
            )

    def mark_stalled(self, no_progress_s: float) -> list[str]:
        with self._tx() as cur:
            now = self._clock()
            rows = cur.execute(
                "SELECT run_key FROM runs WHERE state IN ('queued', 'running') AND updated_at < ?",
                (now - no_progress_s,),
            ).fetchall()
            keys = [str(r[0]) for r in rows]
            for k in keys:
                cur.execute(
                    """UPDATE runs SET state = 'stalled', error = ?, finished_at = ?, updated_at = ?,
                           lease_owner = NULL, lease_expires_at = NULL WHERE run_key = ?""",
                    (f"no progress for {no_progress_s:.0f} s", now, now, k),
                )
            return keys


def _split_sql(script: str) -> list[str]:
    """executescript() would COMMIT our transaction; run the migration statement by statement instead."""
    lines = [ln for ln in script.splitlines() if not ln.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
