"""The store's connection, transactions, the one state-transition function and the attempt writer.

One connection per store instance behind a re-entrant lock (threads: the blind-spot critics call the
memo concurrently, and `:memory:` is one database only through one shared connection) and
BEGIN IMMEDIATE around every read-modify-write (processes sharing a file in WAL mode).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.adapters.state_sqlite.migrations import MigrationError, migrate
from app.core.results import Usage
from app.pipeline.ports import ATTEMPT_OUTCOMES, RUN_STATES, TERMINAL_STATES, AttemptRecord

Clock = Callable[[], float]
MEMORY = ":memory:"


class StoreError(RuntimeError):
    """The store cannot be used (unreadable, not a database, migrated by a newer program)."""


class _Keep:
    """Marker: leave the column as it is."""


KEEP = _Keep()


def check_state(state: str) -> None:
    if state not in RUN_STATES:
        raise ValueError(f"unknown run state {state!r}; expected one of {RUN_STATES}")


def payload_json(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def marks(values: Collection[Any]) -> str:
    return ",".join("?" * len(values))


class Connection:
    """Opening, migrating and transacting; the store's tables are written through this class only."""

    def __init__(
        self, path: str | Path = MEMORY, *, clock: Clock = time.time, busy_timeout_s: float = 30.0
    ) -> None:
        self.location = str(path)
        self._clock = clock
        self._lock = threading.RLock()
        memory = self.location == MEMORY
        try:
            if not memory:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                self.location, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the store {self.location}: {exc}") from exc
        try:
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            if not memory:
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StoreError(f"{self.location}: cannot enable WAL mode (got {mode})")
                self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            migrate(self._tx)
        except sqlite3.Error as exc:  # e.g. "file is not a database": say which file
            self._conn.close()
            raise StoreError(f"cannot open the store {self.location}: {exc}") from exc
        except MigrationError as exc:
            self._conn.close()
            raise StoreError(f"{self.location}: {exc}") from exc
        except StoreError:
            self._conn.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            rows: list[sqlite3.Row] = self._conn.execute(sql, params).fetchall()
            return rows

    def _ensure_row(self, cur: sqlite3.Cursor, run_key: str, meta: Mapping[str, Any] | None = None) -> None:
        now = self._clock()
        cur.execute(
            "INSERT OR IGNORE INTO runs (run_key, meta, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (run_key, payload_json(meta or {}), now, now),
        )

    def _transition(
        self,
        cur: sqlite3.Cursor,
        run_key: str,
        to: str,
        *,
        from_states: Collection[str] | None,
        holder: str | None = None,
        take_lease: tuple[str, float] | None = None,
        error: str | None | _Keep = KEEP,
    ) -> bool:
        """Every change of `runs.state` goes through here. True when the run moved.

        from_states None: from any state. holder: only while that owner holds the lease. take_lease
        (owner, ttl_s): the claim's compare-and-set, the lease must be free, expired or the owner's.
        A terminal state sets finished_at and clears the lease; `queued` clears it too (the run is
        given back); other states keep it, unless take_lease sets it.
        """
        check_state(to)
        now = self._clock()
        sets: list[str] = ["state = ?", "updated_at = ?"]
        params: list[Any] = [to, now]
        if not isinstance(error, _Keep):
            sets.append("error = ?")
            params.append(error)
        if to in TERMINAL_STATES:
            sets.append("finished_at = ?")
            params.append(now)
        else:
            sets.append("finished_at = NULL")
        if take_lease is not None:
            sets += ["lease_owner = ?", "lease_expires_at = ?"]
            params += [take_lease[0], now + take_lease[1]]
        elif to in TERMINAL_STATES or to == "queued":
            sets += ["lease_owner = NULL", "lease_expires_at = NULL"]
        where: list[str] = ["run_key = ?"]
        where_params: list[Any] = [run_key]
        if from_states is not None:
            where.append(f"state IN ({marks(from_states)})")
            where_params += list(from_states)
        if holder is not None:
            where.append("lease_owner = ?")
            where_params.append(holder)
        if take_lease is not None:
            where.append("(lease_owner IS NULL OR lease_owner = ? OR lease_expires_at <= ?)")
            where_params += [take_lease[0], now]
        cur.execute(f"UPDATE runs SET {', '.join(sets)} WHERE {' AND '.join(where)}", params + where_params)
        return cur.rowcount == 1

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
        if outcome not in ATTEMPT_OUTCOMES:
            raise ValueError(f"unknown attempt outcome {outcome!r}; expected one of {ATTEMPT_OUTCOMES}")
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
