"""Checkpoints, attempts, content-addressed results, spend and run records (the CheckpointStore,
SpendLedger and RunRecords parts of the port) on PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.adapters.state_common import attempt_of, check_state, payload_json, run_of
from app.adapters.state_postgres.connection import Connection
from app.core.results import Usage
from app.pipeline.ports import AttemptInfo, AttemptRecord, RunRecord


class RunsTables(Connection):
    # -- checkpoints and attempts ------------------------------------------------------------------------
    def get(self, run_key: str, stage: str) -> dict[str, Any] | None:
        rows = self._read(
            "SELECT payload FROM checkpoints WHERE run_key = %s AND stage = %s", (run_key, stage)
        )
        if not rows:
            return None
        result: dict[str, Any] = json.loads(rows[0]["payload"])
        return result

    def get_result(self, result_key: str) -> dict[str, Any] | None:
        rows = self._read("SELECT payload FROM stage_results WHERE result_key = %s", (result_key,))
        if not rows:
            return None
        result: dict[str, Any] = json.loads(rows[0]["payload"])
        return result

    def put_result(self, result_key: str, stage: str, payload: Mapping[str, Any]) -> None:
        with self._tx() as cur:
            cur.execute(
                """INSERT INTO stage_results (result_key, stage, payload, created_at) VALUES (%s, %s, %s, %s)
                   ON CONFLICT (result_key) DO NOTHING""",
                (result_key, stage, payload_json(payload), self._clock()),
            )

    def put(
        self, run_key: str, stage: str, seq: int | None, payload: Mapping[str, Any], info: AttemptInfo
    ) -> bool:
        text = payload_json(payload)
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            self._lock_run(cur, run_key)
            if seq is None:
                row = cur.execute(
                    "SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM checkpoints WHERE run_key = %s", (run_key,)
                ).fetchone()
                assert row is not None
                seq = int(row["n"])
            cur.execute(
                """INSERT INTO checkpoints (run_key, stage, seq, payload, created_at)
                   VALUES (%s, %s, %s, %s, %s) ON CONFLICT (run_key, stage) DO NOTHING""",
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
        rows = self._read("SELECT * FROM attempts WHERE run_key = %s ORDER BY id", (run_key,))
        return [attempt_of(r) for r in rows]

    def checkpoints(self, run_key: str) -> list[tuple[int, str]]:
        rows = self._read(
            "SELECT seq, stage FROM checkpoints WHERE run_key = %s ORDER BY seq, stage", (run_key,)
        )
        return [(int(r["seq"]), str(r["stage"])) for r in rows]

    # -- spend -------------------------------------------------------------------------------------------
    def add_spend(self, scope: str, period: str, usd: float, calls: int = 1) -> float:
        with self._tx() as cur:
            row = cur.execute(
                """INSERT INTO spend (scope, period, usd, calls, updated_at) VALUES (%s, %s, %s, %s, %s)
                   ON CONFLICT (scope, period) DO UPDATE SET usd = spend.usd + EXCLUDED.usd,
                       calls = spend.calls + EXCLUDED.calls, updated_at = EXCLUDED.updated_at
                   RETURNING usd""",
                (scope, period, usd, calls, self._clock()),
            ).fetchone()
        assert row is not None
        return float(row["usd"])

    def spent(self, scope: str, period: str) -> float:
        rows = self._read("SELECT usd FROM spend WHERE scope = %s AND period = %s", (scope, period))
        return float(rows[0]["usd"]) if rows else 0.0

    # -- run records -------------------------------------------------------------------------------------
    def ensure_run(self, run_key: str, meta: Mapping[str, Any]) -> RunRecord:
        with self._tx() as cur:
            self._ensure_row(cur, run_key, meta)
        run = self.get_run(run_key)
        assert run is not None
        return run

    def get_run(self, run_key: str) -> RunRecord | None:
        rows = self._read("SELECT * FROM runs WHERE run_key = %s", (run_key,))
        return run_of(rows[0]) if rows else None

    def set_state(self, run_key: str, state: str, error: str | None = None) -> None:
        check_state(state)
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            self._transition(cur, run_key, state, from_states=None, error=error)
