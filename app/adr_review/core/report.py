"""The feedback report (issue 17): what reviewers did with the findings of one repository (or all) in a
time window, measured against the seed's sunset rule. Pure: the store's outcome records in, one frozen
`Report` out; app/adr_review/core/render.py turns it into Markdown, the CLI and the App into JSON.

The sunset rule (ADR-0071, "Rollback Plan"): after three months of use, retire the blind-spot gate if
fewer than 20 % of findings are accepted *or* fewer than 10 % of ADRs are revised (its third line, more
than 0.5 h a month of people's time, is not something the store can measure, and the report says so).

What counts, and in which window:
- an ADR (repo, PR, path) counts in the window its first review falls in; a finding in the window it was
  first shown in (the store's `outcomes(since, until)` reads them that way);
- acceptance rate = findings adopted (the "Adopted" box ticked) / findings shown;
- revision rate = ADRs revised in a later push after findings were shown / ADRs *that had findings
  shown* (an ADR with nothing shown cannot be revised because of a finding, so it is not in the
  denominator);
- a finding both ticked and dismissed counts in both;
- below `min_shown` findings shown (default 10) the verdict is "not enough data": two findings, one
  adopted, say nothing about a rule of 20 %;
- the guard's answers (issue 28: the conflicts its model check showed on code PRs, with their Adopted
  boxes and dismissals) are counted apart, in `guard`: they are not findings of the blind-spot gate,
  so they move neither its rates nor its verdict, and the guard comment is not a reviewed ADR.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from adr_review.core.outcomes import AdrOutcome, FindingOutcome

ACCEPTANCE_LINE = 0.20  # ADR-0071: retire if fewer than 20 % of findings are accepted
REVISION_LINE = 0.10  # ... or fewer than 10 % of ADRs are revised
MIN_SHOWN = 10  # findings shown before the report gives a verdict
TOP_PERSPECTIVES = 5
LATEST_DISMISSALS = 10

VerdictKind = Literal["keep", "retire", "not_enough_data"]


@dataclass(frozen=True)
class PerspectiveCount:
    """One perspective's findings: how many were shown, how many dismissed, and the dismissed share."""

    perspective: str
    shown: int
    dismissed: int

    @property
    def share(self) -> float:
        return self.dismissed / self.shown if self.shown else 0.0


@dataclass(frozen=True)
class Dismissal:
    """A dismissed finding, for the report's list (title and reason are untrusted text)."""

    repo: str
    pr: int
    path: str
    finding_id: str
    perspective: str
    title: str
    by: str | None
    reason: str


@dataclass(frozen=True)
class GuardCounts:
    """The guard's answers in the window (each in the window it was first shown in)."""

    prs: int  # pull requests whose guard comment was recorded (first written in the window)
    shown: int  # answers shown with an Adopted box
    adopted: int
    dismissed: int
    dismissals: tuple[Dismissal, ...] = ()  # the latest first, at most LATEST_DISMISSALS

    @property
    def adoption_rate(self) -> float | None:
        return _rate(self.adopted, self.shown)


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    reasons: tuple[str, ...] = ()  # retire: which line(s) failed ("acceptance", "revision")

    @property
    def text(self) -> str:
        """The verdict in one line of plain English (the JSON's and the logs'; Markdown has its own)."""
        if self.kind == "retire":
            return "retire: " + " and ".join(f"{r} rate below its line" for r in self.reasons)
        return "not enough data" if self.kind == "not_enough_data" else "keep"


@dataclass(frozen=True)
class Report:
    repo: str | None  # None: every repository in the store
    since: float  # unix time, inclusive
    until: float  # exclusive
    adrs_reviewed: int
    adrs_with_findings: int
    adrs_revised: int  # of those with findings shown
    findings_shown: int
    findings_adopted: int
    findings_dismissed: int
    acceptance_rate: float | None  # None: no finding shown
    revision_rate: float | None  # None: no ADR had findings shown
    cost_usd: float
    cost_per_adr: float | None  # None: no ADR reviewed
    verdict: Verdict
    min_shown: int
    perspectives: tuple[PerspectiveCount, ...]  # the most dismissed first (only those with a dismissal)
    dismissals: tuple[Dismissal, ...]  # the latest first, at most LATEST_DISMISSALS
    repos: tuple[str, ...]  # the repositories the numbers come from
    guard: GuardCounts = GuardCounts(0, 0, 0, 0)  # the guard's answers, apart from the findings


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def verdict(
    acceptance: float | None, revision: float | None, shown: int, min_shown: int = MIN_SHOWN
) -> Verdict:
    """The sunset rule on the two measured rates: either below its line retires the gate."""
    if shown < max(1, min_shown) or acceptance is None or revision is None:
        return Verdict("not_enough_data")
    failed = tuple(
        name
        for name, rate, line in (
            ("acceptance", acceptance, ACCEPTANCE_LINE),
            ("revision", revision, REVISION_LINE),
        )
        if rate < line
    )
    return Verdict("retire", failed) if failed else Verdict("keep")


def _key(o: AdrOutcome | FindingOutcome) -> tuple[str, int, str]:
    return (o.repo, o.pr, o.path)


def build_report(
    adrs: Sequence[AdrOutcome],
    findings: Sequence[FindingOutcome],
    *,
    repo: str | None,
    since: float,
    until: float,
    min_shown: int = MIN_SHOWN,
    top: int = TOP_PERSPECTIVES,
) -> Report:
    """The report of the outcomes the store read for (repo, [since, until)): the guard's records apart."""
    guard_adrs, adrs = [a for a in adrs if a.guard], [a for a in adrs if not a.guard]
    guard, findings = [f for f in findings if f.guard], [f for f in findings if not f.guard]
    shown_keys = {_key(f) for f in findings}
    with_findings = [a for a in adrs if _key(a) in shown_keys]
    revised = sum(1 for a in with_findings if a.revised)
    adopted = sum(1 for f in findings if f.adopted)
    dismissed = [f for f in findings if f.dismissed]
    acceptance = _rate(adopted, len(findings))
    revision = _rate(revised, len(with_findings))
    cost = sum(a.cost_usd for a in adrs)
    return Report(
        repo=repo,
        since=since,
        until=until,
        adrs_reviewed=len(adrs),
        adrs_with_findings=len(with_findings),
        adrs_revised=revised,
        findings_shown=len(findings),
        findings_adopted=adopted,
        findings_dismissed=len(dismissed),
        acceptance_rate=acceptance,
        revision_rate=revision,
        cost_usd=cost,
        cost_per_adr=cost / len(adrs) if adrs else None,
        verdict=verdict(acceptance, revision, len(findings), min_shown),
        min_shown=min_shown,
        perspectives=most_dismissed(findings, top),
        dismissals=latest_dismissals(dismissed),
        repos=tuple(sorted({a.repo for a in (*adrs, *guard_adrs)} | {f.repo for f in (*findings, *guard)})),
        guard=GuardCounts(
            prs=len(guard_adrs),
            shown=len(guard),
            adopted=sum(1 for f in guard if f.adopted),
            dismissed=sum(1 for f in guard if f.dismissed),
            dismissals=latest_dismissals([f for f in guard if f.dismissed]),
        ),
    )


def latest_dismissals(dismissed: Iterable[FindingOutcome]) -> tuple[Dismissal, ...]:
    return tuple(
        Dismissal(f.repo, f.pr, f.path, f.finding_id, f.perspective, f.title, f.dismissed_by, f.reason)
        for f in sorted(dismissed, key=lambda f: (-f.shown_at, f.repo, f.pr, f.finding_id))
    )[:LATEST_DISMISSALS]


def most_dismissed(
    findings: Iterable[FindingOutcome], top: int = TOP_PERSPECTIVES
) -> tuple[PerspectiveCount, ...]:
    """Perspectives with at least one dismissal, the most dismissed first (then the larger share, then
    the name: a stable order for equal counts)."""
    shown: dict[str, int] = {}
    dismissed: dict[str, int] = {}
    for f in findings:
        shown[f.perspective] = shown.get(f.perspective, 0) + 1
        if f.dismissed:
            dismissed[f.perspective] = dismissed.get(f.perspective, 0) + 1
    counts = [PerspectiveCount(p, shown[p], n) for p, n in dismissed.items()]
    counts.sort(key=lambda c: (-c.dismissed, -c.share, c.perspective))
    return tuple(counts[: max(0, top)])


def report_dict(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data (`adr-review report --format json`, `GET /report?format=json`)."""
    return {
        "repo": report.repo,
        "repos": list(report.repos),
        "since": report.since,
        "until": report.until,
        "since_utc": _iso(report.since),
        "until_utc": _iso(report.until),
        "adrs_reviewed": report.adrs_reviewed,
        "adrs_with_findings": report.adrs_with_findings,
        "adrs_revised": report.adrs_revised,
        "findings_shown": report.findings_shown,
        "findings_adopted": report.findings_adopted,
        "findings_dismissed": report.findings_dismissed,
        "acceptance_rate": report.acceptance_rate,
        "revision_rate": report.revision_rate,
        "revision_rate_denominator": "adrs_with_findings",
        "cost_usd": round(report.cost_usd, 6),
        "cost_per_adr_usd": None if report.cost_per_adr is None else round(report.cost_per_adr, 6),
        "sunset": {
            "acceptance_line": ACCEPTANCE_LINE,
            "revision_line": REVISION_LINE,
            "min_findings_shown": report.min_shown,
            "verdict": report.verdict.kind,
            "failed": list(report.verdict.reasons),
            "text": report.verdict.text,
        },
        "dismissed_perspectives": [
            {"perspective": c.perspective, "shown": c.shown, "dismissed": c.dismissed, "share": c.share}
            for c in report.perspectives
        ],
        "latest_dismissals": [_dismissal(d) for d in report.dismissals],
        "guard": {  # apart from the findings: not in the rates or the sunset verdict
            "prs": report.guard.prs,
            "answers_shown": report.guard.shown,
            "answers_adopted": report.guard.adopted,
            "answers_dismissed": report.guard.dismissed,
            "adoption_rate": report.guard.adoption_rate,
            "latest_dismissals": [_dismissal(d) for d in report.guard.dismissals],
        },
    }


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def _dismissal(d: Dismissal) -> Mapping[str, Any]:
    return {
        "repo": d.repo,
        "pr": d.pr,
        "path": d.path,
        "finding_id": d.finding_id,
        "perspective": d.perspective,
        "title": d.title,
        "by": d.by,
        "reason": d.reason,
    }


__all__ = [
    "ACCEPTANCE_LINE",
    "MIN_SHOWN",
    "REVISION_LINE",
    "Dismissal",
    "GuardCounts",
    "PerspectiveCount",
    "Report",
    "Verdict",
    "build_report",
    "most_dismissed",
    "report_dict",
    "verdict",
]
