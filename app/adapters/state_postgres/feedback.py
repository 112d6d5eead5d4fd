"""Reviewers' feedback on findings (the FeedbackLog part of the port): the shared statements of
app/adapters/feedback_sql.py on this engine's transactions."""

from __future__ import annotations

from collections.abc import Mapping

from app.adapters import feedback_sql
from app.adapters.state_postgres.connection import Connection
from app.core.feedback import Ledger
from app.core.outcomes import AdrOutcome, FindingOutcome

_M = "%s"


class FeedbackTables(Connection):
    def record_ledger(self, repo: str, pr: int, path: str, ledger: Ledger) -> None:
        with self._tx() as cur:
            feedback_sql.record_ledger(cur.execute, _M, self._clock(), repo, pr, path, ledger)

    def record_ticks(
        self, repo: str, pr: int, path: str, ticks: Mapping[str, bool], actor: str | None
    ) -> list[str]:
        with self._tx() as cur:
            return feedback_sql.record_ticks(cur.execute, _M, self._clock(), repo, pr, path, ticks, actor)

    def record_dismissal(self, repo: str, pr: int, finding_id: str, actor: str, reason: str) -> str | None:
        with self._tx() as cur:
            return feedback_sql.record_dismissal(
                cur.execute, _M, self._clock(), repo, pr, finding_id, actor, reason
            )

    def outcomes(
        self, repo: str | None, since: float, until: float
    ) -> tuple[list[AdrOutcome], list[FindingOutcome]]:
        return feedback_sql.outcomes(self._read, _M, repo, since, until)
