"""Checkpoints, attempts, content-addressed results, spend and run records (the CheckpointStore,
SpendLedger and RunRecords parts of the port), written once for both engines: each statement takes
the engine's placeholder (`_mark`: `?` for SQLite, `%s` for PostgreSQL) and runs on the cursor of the
engine's transaction. Rows are read by column name (sqlite3.Row and psycopg's dict rows both allow it).

What differs per engine stays in its connection class: the transaction and `_lock_run` (PostgreSQL
takes the run's row; SQLite's BEGIN IMMEDIATE already serialises writers); the one state transition
and the attempt writer are state_sql.SqlTables'."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from adr_review.adapters.state_common import attempt_of, check_state, payload_json, run_of
from adr_review.adapters.state_sql import SqlTables
from adr_review.core.results import Usage
from adr_review.pipeline.state_ports import AttemptInfo, AttemptRecord, RunRecord


class RunsTables(SqlTables):
    """Mixed into each engine's store after its connection class (state_sql.SqlTables says what that
    provides)."""

    # -- checkpoints and attempts ------------------------------------------------------------------------
    def get(self, run_key: str, stage: str) -> dict[str, Any] | None:
        m = self._mark
        rows = self._read(
            f"SELECT payload FROM checkpoints WHERE run_key = {m} AND stage = {m}", (run_key, stage)
        )
        return _payload(rows)

    def get_result(self, result_key: str) -> dict[str, Any] | None:
        rows = self._read(f"SELECT payload FROM stage_results WHERE result_key = {self._mark}", (result_key,))
        return _payload(rows)

    def put_result(self, result_key: str, stage: str, payload: Mapping[str, Any]) -> None:
        m = self._mark
        with self._tx() as cur:
            cur.execute(
                f"""INSERT INTO stage_results (result_key, stage, payload, created_at) VALUES ({m}, {m}, {m}, {m})
                    ON CONFLICT (result_key) DO NOTHING""",
                (result_key, stage, payload_json(payload), self._clock()),
            )

    def put(
        self, run_key: str, stage: str, seq: int | None, payload: Mapping[str, Any], info: AttemptInfo
    ) -> bool:
        m, text = self._mark, payload_json(payload)
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            self._lock_run(cur, run_key)
            if seq is None:
                row = cur.execute(
                    f"SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM checkpoints WHERE run_key = {m}", (run_key,)
                ).fetchone()
                seq = int(row["n"])
            cur.execute(
                f"""INSERT INTO checkpoints (run_key, stage, seq, payload, created_at)
                    VALUES ({m}, {m}, {m}, {m}, {m}) ON CONFLICT (run_key, stage) DO NOTHING""",
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
            self._lock_run(cur, run_key)
            return self._insert_attempt(
                cur, run_key, stage, attempt, outcome, duration_s, usage, error, False, owner
            )

    def attempts(self, run_key: str) -> list[AttemptRecord]:
        rows = self._read(f"SELECT * FROM attempts WHERE run_key = {self._mark} ORDER BY id", (run_key,))
        return [attempt_of(r) for r in rows]

    def checkpoints(self, run_key: str) -> list[tuple[int, str]]:
        rows = self._read(
            f"SELECT seq, stage FROM checkpoints WHERE run_key = {self._mark} ORDER BY seq, stage", (run_key,)
        )
        return [(int(r["seq"]), str(r["stage"])) for r in rows]

    # -- spend -------------------------------------------------------------------------------------------
    def add_spend(self, scope: str, period: str, usd: float, calls: int = 1) -> float:
        m = self._mark
        with self._tx() as cur:
            cur.execute(
                f"""INSERT INTO spend (scope, period, usd, calls, updated_at) VALUES ({m}, {m}, {m}, {m}, {m})
                    ON CONFLICT (scope, period) DO UPDATE SET usd = spend.usd + excluded.usd,
                        calls = spend.calls + excluded.calls, updated_at = excluded.updated_at""",
                (scope, period, usd, calls, self._clock()),
            )
            row = cur.execute(
                f"SELECT usd FROM spend WHERE scope = {m} AND period = {m}", (scope, period)
            ).fetchone()
        return float(row["usd"])

    def spent(self, scope: str, period: str) -> float:
        m = self._mark
        rows = self._read(f"SELECT usd FROM spend WHERE scope = {m} AND period = {m}", (scope, period))
        return float(rows[0]["usd"]) if rows else 0.0

    # -- run records -------------------------------------------------------------------------------------
    def ensure_run(self, run_key: str, meta: Mapping[str, Any]) -> RunRecord:
        with self._tx() as cur:
            self._ensure_row(cur, run_key, meta)
        run = self.get_run(run_key)
        assert run is not None
        return run

    def get_run(self, run_key: str) -> RunRecord | None:
        rows = self._read(f"SELECT * FROM runs WHERE run_key = {self._mark}", (run_key,))
        return run_of(rows[0]) if rows else None

    def set_state(self, run_key: str, state: str, error: str | None = None) -> None:
        check_state(state)
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            self._transition(cur, run_key, state, from_states=None, error=error)


def _payload(rows: list[Any]) -> dict[str, Any] | None:
    if not rows:
        return None
    result: dict[str, Any] = json.loads(rows[0]["payload"])
    return result
