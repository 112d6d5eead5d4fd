"""The feedback report over the state store (issue 17): one use case for its three callers — the CLI
(`adr-review report`), the App (`GET /report`) and the scheduled Action, which writes
`report_markdown(...)` to its job summary."""

from __future__ import annotations

from dataclasses import dataclass

from adr_review.core.render import render_report
from adr_review.core.report import MIN_SHOWN, Report, build_report
from adr_review.pipeline.state_ports import FeedbackLog

DAY_S = 86_400.0
DEFAULT_DAYS = 30


@dataclass(frozen=True)
class Window:
    """[since, until) in unix time."""

    since: float
    until: float

    @classmethod
    def last_days(cls, days: float, now: float) -> Window:
        if days <= 0:
            raise ValueError(f"days must be positive, not {days}")
        return cls(now - days * DAY_S, now)


def report_for(store: FeedbackLog, repo: str | None, window: Window, *, min_shown: int = MIN_SHOWN) -> Report:
    adrs, findings = store.outcomes(repo, window.since, window.until)
    return build_report(
        adrs, findings, repo=repo, since=window.since, until=window.until, min_shown=min_shown
    )


def report_markdown(
    store: FeedbackLog,
    repo: str | None,
    days: float = DEFAULT_DAYS,
    *,
    now: float,
    language: str | None = None,
    min_shown: int = MIN_SHOWN,
) -> str:
    """The report of the last `days` days up to `now`, as Markdown (what the Action's job summary shows)."""
    report = report_for(store, repo, Window.last_days(days, now), min_shown=min_shown)
    return render_report(report, language=language)


__all__ = ["DEFAULT_DAYS", "Window", "report_for", "report_markdown"]
