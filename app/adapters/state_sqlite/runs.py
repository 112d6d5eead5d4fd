"""Checkpoints, attempts and run records (the CheckpointStore and RunRecords parts of the port)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.adapters.state_common import attempt_of, run_of
from app.adapters.state_sqlite.connection import Connection, check_state, payload_json
from app.core.results import Usage
from app.pipeline.ports import AttemptInfo, AttemptRecord, RunRecord


class RunsTables(Connection):
    # -- checkpoints and attempts ------------------------------------------------------------------------
    def get(self, run_key: str, stage: str) -> dict[str, Any] | None:
        rows = self._read("SELECT payload FROM checkpoints WHERE run_key = ? AND stage = ?", (run_key, stage))
        if not rows:
            return None
        result: dict[str, Any] = json.loads(rows[0][0])
        return result

    def add_spend(self, scope: str, period: str, usd: float, calls: int = 1) -> float:
        with self._tx() as cur:
            cur.execute(
                """INSERT INTO spend (scope, period, usd, calls, updated_at) VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (scope, period) DO UPDATE SET usd = usd + excluded.usd,
                       calls = calls + excluded.calls, updated_at = excluded.updated_at""",
                (scope, period, usd, calls, self._clock()),
            )
            row = cur.execute(
                "SELECT usd FROM spend WHERE scope = ? AND period = ?", (scope, period)
            ).fetchone()
        return float(row[0])

    def spent(self, scope: str, period: str) -> float:
        rows = self._read("SELECT usd FROM spend WHERE scope = ? AND period = ?", (scope, period))
        return float(rows[0][0]) if rows else 0.0

    def get_result(self, result_key: str) -> dict[str, Any] | None:
        rows = self._read("SELECT payload FROM stage_results WHERE result_key = ?", (result_key,))
        if not rows:
            return None
        result: dict[str, Any] = json.loads(rows[0][0])
        return result

    def put_result(self, result_key: str, stage: str, payload: Mapping[str, Any]) -> None:
        with self._tx() as cur:
            cur.execute(
                "INSERT OR IGNORE INTO stage_results (result_key, stage, payload, created_at) VALUES (?, ?, ?, ?)",
                (result_key, stage, payload_json(payload), self._clock()),
            )

    def put(
        self, run_key: str, stage: str, seq: int | None, payload: Mapping[str, Any], info: AttemptInfo
    ) -> bool:
        text = payload_json(payload)
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            if seq is None:
                seq = int(
                    cur.execute(
                        "SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE run_key = ?", (run_key,)
                    ).fetchone()[0]
                )
            cur.execute(
                """INSERT OR IGNORE INTO checkpoints (run_key, stage, seq, payload, created_at)
                   VALUES (?, ?, ?, ?, ?)""",
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
        rows = self._read("SELECT * FROM attempts WHERE run_key = ? ORDER BY id", (run_key,))
        return [attempt_of(r) for r in rows]

    def checkpoints(self, run_key: str) -> list[tuple[int, str]]:
        rows = self._read(
            "SELECT seq, stage FROM checkpoints WHERE run_key = ? ORDER BY seq, stage", (run_key,)
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    # -- run records -------------------------------------------------------------------------------------
    def ensure_run(self, run_key: str, meta: Mapping[str, Any]) -> RunRecord:
        with self._tx() as cur:
            self._ensure_row(cur, run_key, meta)
        run = self.get_run(run_key)
        assert run is not None
        return run

    def get_run(self, run_key: str) -> RunRecord | None:
        rows = self._read("SELECT * FROM runs WHERE run_key = ?", (run_key,))
        return run_of(rows[0]) if rows else None

    def set_state(self, run_key: str, state: str, error: str | None = None) -> None:
        check_state(state)
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            self._transition(cur, run_key, state, from_states=None, error=error)
