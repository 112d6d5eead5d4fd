"""Checkpoints, attempts and run records (the CheckpointStore and RunRecords parts of the port)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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
        if not rows:
            return None
        r = rows[0]
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
        check_state(state)
        with self._tx() as cur:
            self._ensure_row(cur, run_key)
            self._transition(cur, run_key, state, from_states=None, error=error)
