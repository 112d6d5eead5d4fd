"""Report -> the view model templates/report.md.j2 prints: trusted strings from the `report` table of
templates/i18n/<lang>.yaml, `Untrusted` for what reviewers and models wrote (finding titles, dismissal
reasons, ADR paths, logins, perspective names read from the store). render.py loads the tables.

The charts are Mermaid blocks (GitHub renders them inline in comments and job summaries): inside a
fence Markdown escaping does not apply, so their labels are reduced to a plain character set here
(`mermaid_label`) instead of going through the Markdown sanitiser.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from adr_review.core.markdown_safe import clean, untrusted
from adr_review.core.report import ACCEPTANCE_LINE, REVISION_LINE, Dismissal, Report

Strings = Mapping[str, str]

_MERMAID_UNSAFE = re.compile(r"[^A-Za-z0-9 _./-]+")
CAPS = {"title": 160, "reason": 300, "path": 200, "perspective": 60, "login": 40}


def mermaid_label(text: str, limit: int = 40) -> str:
    """A label safe inside a Mermaid string: letters, digits, space and `_./-` only (no quote, no
    bracket, no directive), never empty."""
    out = " ".join(_MERMAID_UNSAFE.sub(" ", clean(text)).split())[:limit].strip()
    return out or "?"


def pct(rate: float | None, t: Strings) -> str:
    """50 %, 33.3 %; "—" when there was nothing to divide."""
    if rate is None:
        return t["none"]
    v = rate * 100
    n = f"{v:.0f}" if abs(v - round(v)) < 1e-9 else f"{v:.1f}"
    return t["percent"].format(n=n)


def usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def _mark(rate: float | None, line: float) -> str:
    if rate is None:
        return "—"
    return "✅" if rate >= line else "❌"


def build_report_view(report: Report, t: Strings) -> dict[str, Any]:
    days = max(0, round((report.until - report.since) / 86_400))
    v = report.verdict
    if v.kind == "retire":
        verdict = t["verdict_retire"].format(lines=t["and"].join(t[f"line_{r}"] for r in v.reasons))
    elif v.kind == "keep":
        verdict = t["verdict_keep"]
    else:
        verdict = _plural(
            t["verdict_not_enough"].format(shown=report.findings_shown, min=report.min_shown),
            report.findings_shown,
        )
    charts = report.acceptance_rate is not None and report.revision_rate is not None
    return {
        "scope": untrusted(report.repo) if report.repo else None,
        "window": _plural(
            t["window"].format(since=_day(report.since), until=_day(report.until), days=days), days
        ),
        "repos": [untrusted(r) for r in report.repos],
        "adrs_reviewed": report.adrs_reviewed,
        "adrs_with_findings": report.adrs_with_findings,
        **_counts(report.findings_shown, report.findings_adopted, report.findings_dismissed, t),
        "acceptance": pct(report.acceptance_rate, t),
        "acceptance_of": t["of"].format(n=report.findings_adopted, d=report.findings_shown),
        "acceptance_line": pct(ACCEPTANCE_LINE, t),
        "acceptance_ok": _mark(report.acceptance_rate, ACCEPTANCE_LINE),
        "revision": pct(report.revision_rate, t),
        "revision_of": t["of"].format(n=report.adrs_revised, d=report.adrs_with_findings),
        "revision_line": pct(REVISION_LINE, t),
        "revision_ok": _mark(report.revision_rate, REVISION_LINE),
        "cost": usd(report.cost_usd),
        "cost_per_adr": t["none"] if report.cost_per_adr is None else usd(report.cost_per_adr),
        "verdict_kind": v.kind,
        "verdict": verdict,
        "rates_chart": (
            {
                "bars": [_num(report.acceptance_rate), _num(report.revision_rate)],
                "lines": [_num(ACCEPTANCE_LINE), _num(REVISION_LINE)],
            }
            if charts
            else None
        ),
        "perspectives": [
            {
                "name": untrusted(c.perspective),
                "chart_name": mermaid_label(c.perspective),
                "dismissed": c.dismissed,
                "shown": c.shown,
                "share": pct(c.share, t),
            }
            for c in report.perspectives
        ],
        "dismissals": [_dismissal(d, f"{d.repo}#{d.pr} {d.path}") for d in report.dismissals],
        "guard": _guard(report, t),
        "caps": CAPS,
    }


def _dismissal(d: Dismissal, where: str) -> dict[str, Any]:
    return {
        "where": untrusted(where),
        "id": untrusted(d.finding_id),
        "title": untrusted(d.title),
        "by": untrusted(d.by or "?"),
        "reason": untrusted(d.reason) if d.reason.strip() else None,
    }


def _guard(report: Report, t: Strings) -> dict[str, Any] | None:
    """The guard's own section; None when no guard comment was recorded in the window (guard off)."""
    g = report.guard
    if not g.prs and not g.shown:
        return None
    return {
        "prs": g.prs,
        **_counts(g.shown, g.adopted, g.dismissed, t),
        # a guard answer's row: its verdict is kept as its severity, its ADR as its title
        "dismissals": [_dismissal(d, f"{d.repo}#{d.pr}") for d in g.dismissals],
    }


def _counts(shown: int, adopted: int, dismissed: int, t: Strings) -> dict[str, Any]:
    """Shown, adopted and dismissed, with the shares of what was shown (the findings', the guard's)."""
    return {
        "shown": shown,
        "adopted": adopted,
        "dismissed": dismissed,
        "adopted_pct": pct(_share(adopted, shown), t),
        "dismissed_pct": pct(_share(dismissed, shown), t),
    }


def _plural(text: str, n: int) -> str:
    """ "(s)" becomes the English plural ending (as in the comment's strings; Japanese has none)."""
    return text.replace("(s)", "" if n == 1 else "s")


def _share(n: int, d: int) -> float | None:
    return n / d if d else None


def _num(rate: float | None) -> float:
    return round((rate or 0.0) * 100, 1)


__all__ = ["build_report_view", "mermaid_label", "pct", "usd"]
