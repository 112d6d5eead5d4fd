"""The FeedbackLog part of the StateStore (app/adr_review/pipeline/state_ports.py), written once for both engines:
the statements take the engine's placeholder (`?` for SQLite, `%s` for PostgreSQL) and run on the
cursor of the engine's transaction. Every write is an upsert, so re-reading a comment is idempotent."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from adr_review.core.feedback import Ledger
from adr_review.core.outcomes import AdrOutcome, FindingOutcome


# The tables (both engines: INTEGER 0/1 for booleans, and the engine's float type for times).
def tables(real: str) -> tuple[str, ...]:
    return (
        f"""CREATE TABLE IF NOT EXISTS feedback_adrs (
            repo        TEXT NOT NULL,
            pr_number   INTEGER NOT NULL,
            path        TEXT NOT NULL,
            first_at    {real} NOT NULL,
            last_at     {real} NOT NULL,
            revisions   INTEGER NOT NULL,
            revised     INTEGER NOT NULL DEFAULT 0,
            cost_usd    {real} NOT NULL DEFAULT 0,
            PRIMARY KEY (repo, pr_number, path)
        )""",
        f"""CREATE TABLE IF NOT EXISTS feedback_findings (
            repo          TEXT NOT NULL,
            pr_number     INTEGER NOT NULL,
            path          TEXT NOT NULL,
            finding_id    TEXT NOT NULL,
            severity      TEXT NOT NULL,
            perspective   TEXT NOT NULL,
            title         TEXT NOT NULL,
            shown_at      {real} NOT NULL,
            adopted       INTEGER NOT NULL DEFAULT 0,
            adopted_by    TEXT,
            adopted_at    {real},
            dismissed     INTEGER NOT NULL DEFAULT 0,
            dismissed_by  TEXT,
            reason        TEXT NOT NULL DEFAULT '',
            dismissed_at  {real},
            PRIMARY KEY (repo, pr_number, path, finding_id)
        )""",
        "CREATE INDEX IF NOT EXISTS feedback_findings_shown ON feedback_findings (repo, shown_at)",
        "CREATE INDEX IF NOT EXISTS feedback_adrs_first ON feedback_adrs (repo, first_at)",
    )


Execute = Callable[[str, tuple[Any, ...]], Any]  # cursor.execute
_MAX = "CASE WHEN excluded.{c} > {t}.{c} THEN excluded.{c} ELSE {t}.{c} END"
_REASON_CAP = 2000


def record_ledger(
    execute: Execute, m: str, now: float, repo: str, pr: int, path: str, ledger: Ledger
) -> None:
    revisions = len(ledger.revisions) + ledger.dropped
    # Never less than what was recorded: a comment deleted and written again starts a new ledger.
    keep = ", ".join(
        f"{c} = " + _MAX.format(c=c, t="feedback_adrs") for c in ("revisions", "revised", "cost_usd")
    )
    execute(
        f"""INSERT INTO feedback_adrs (repo, pr_number, path, first_at, last_at, revisions, revised, cost_usd)
            VALUES ({m}, {m}, {m}, {m}, {m}, {m}, {m}, {m})
            ON CONFLICT (repo, pr_number, path) DO UPDATE SET last_at = excluded.last_at, {keep}""",
        (repo, pr, path, now, now, revisions, int(ledger.revised), ledger.cost_usd),
    )
    for s in ledger.shown().values():
        execute(
            f"""INSERT INTO feedback_findings
                    (repo, pr_number, path, finding_id, severity, perspective, title, shown_at)
                VALUES ({m}, {m}, {m}, {m}, {m}, {m}, {m}, {m})
                ON CONFLICT (repo, pr_number, path, finding_id) DO UPDATE SET
                    severity = excluded.severity, perspective = excluded.perspective,
                    title = excluded.title""",
            (repo, pr, path, s.id, s.severity, s.perspective, s.title, now),
        )


def record_ticks(
    execute: Execute,
    m: str,
    now: float,
    repo: str,
    pr: int,
    path: str,
    ticks: Mapping[str, bool],
    actor: str | None,
) -> list[str]:
    changed = []
    for fid, on in sorted(ticks.items()):
        cur = execute(
            f"""UPDATE feedback_findings SET adopted = {m}, adopted_by = COALESCE({m}, adopted_by),
                    adopted_at = {m}
                WHERE repo = {m} AND pr_number = {m} AND path = {m} AND finding_id = {m} AND adopted <> {m}""",
            (int(on), actor, now, repo, pr, path, fid, int(on)),
        )
        if cur.rowcount:
            changed.append(fid)
    return changed


def record_dismissal(
    execute: Execute, m: str, now: float, repo: str, pr: int, finding_id: str, actor: str, reason: str
) -> str | None:
    row = execute(
        f"""SELECT path FROM feedback_findings WHERE repo = {m} AND pr_number = {m} AND finding_id = {m}
            ORDER BY shown_at DESC LIMIT 1""",
        (repo, pr, finding_id),
    ).fetchone()
    if row is None:
        return None
    path = str(row["path"])  # sqlite3.Row and psycopg's dict rows both index by name
    execute(
        f"""UPDATE feedback_findings SET dismissed = 1, dismissed_by = {m}, reason = {m}, dismissed_at = {m}
            WHERE repo = {m} AND pr_number = {m} AND path = {m} AND finding_id = {m}""",
        (actor, reason[:_REASON_CAP], now, repo, pr, path, finding_id),
    )
    return path


def outcomes(
    read: Callable[[str, tuple[Any, ...]], list[Any]], m: str, repo: str | None, since: float, until: float
) -> tuple[list[AdrOutcome], list[FindingOutcome]]:
    where_repo = f" AND repo = {m}" if repo is not None else ""
    extra: tuple[Any, ...] = (repo,) if repo is not None else ()
    adrs = [
        AdrOutcome(
            repo=str(r["repo"]),
            pr=int(r["pr_number"]),
            path=str(r["path"]),
            first_at=float(r["first_at"]),
            last_at=float(r["last_at"]),
            revisions=int(r["revisions"]),
            revised=bool(r["revised"]),
            cost_usd=float(r["cost_usd"]),
        )
        for r in read(
            f"""SELECT * FROM feedback_adrs WHERE first_at >= {m} AND first_at < {m}{where_repo}
                ORDER BY repo, pr_number, path""",
            (since, until, *extra),
        )
    ]
    findings = [
        FindingOutcome(
            repo=str(r["repo"]),
            pr=int(r["pr_number"]),
            path=str(r["path"]),
            finding_id=str(r["finding_id"]),
            severity=str(r["severity"]),
            perspective=str(r["perspective"]),
            title=str(r["title"]),
            shown_at=float(r["shown_at"]),
            adopted=bool(r["adopted"]),
            adopted_by=r["adopted_by"],
            dismissed=bool(r["dismissed"]),
            dismissed_by=r["dismissed_by"],
            reason=str(r["reason"]),
        )
        for r in read(
            f"""SELECT * FROM feedback_findings WHERE shown_at >= {m} AND shown_at < {m}{where_repo}
                ORDER BY repo, pr_number, path, finding_id""",
            (since, until, *extra),
        )
    ]
    return adrs, findings


class FeedbackTables:
    """The FeedbackLog methods of both engines' stores: mixed in after the engine's connection class,
    which provides `_tx`, `_read` and `_clock`; `_mark` is the engine's placeholder."""

    _mark: str

    if TYPE_CHECKING:  # the engine's connection class provides these
        _clock: Callable[[], float]

        def _tx(self) -> AbstractContextManager[Any]: ...
        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def record_ledger(self, repo: str, pr: int, path: str, ledger: Ledger) -> None:
        with self._tx() as cur:
            record_ledger(cur.execute, self._mark, self._clock(), repo, pr, path, ledger)

    def record_ticks(
        self, repo: str, pr: int, path: str, ticks: Mapping[str, bool], actor: str | None
    ) -> list[str]:
        with self._tx() as cur:
            return record_ticks(cur.execute, self._mark, self._clock(), repo, pr, path, ticks, actor)

    def record_dismissal(self, repo: str, pr: int, finding_id: str, actor: str, reason: str) -> str | None:
        with self._tx() as cur:
            return record_dismissal(
                cur.execute, self._mark, self._clock(), repo, pr, finding_id, actor, reason
            )

    def outcomes(
        self, repo: str | None, since: float, until: float
    ) -> tuple[list[AdrOutcome], list[FindingOutcome]]:
        return outcomes(self._read, self._mark, repo, since, until)
