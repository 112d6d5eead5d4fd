"""report_markdown: what the scheduled Action writes to its job summary, over the FeedbackLog port."""

from __future__ import annotations

import pytest

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.core.feedback import Ledger, Revision, Shown
from adr_review.pipeline.reporting.report import DAY_S, Window, report_for, report_markdown


class Clock:
    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        return self.t


def test_the_window_is_the_last_days_up_to_now() -> None:
    clock = Clock()
    store = SqliteStateStore(":memory:", clock=clock)
    shown = (Shown("aaaa0001", "high", "privacy", "old finding"),)
    store.record_ledger("acme/shop", 1, "adr/1.md", Ledger().add(Revision("1" * 16, shown, 0.5)))
    clock.t += 40 * DAY_S
    shown = (Shown("bbbb0002", "low", "cost", "new finding"),)
    store.record_ledger("acme/shop", 2, "adr/2.md", Ledger().add(Revision("2" * 16, shown, 0.25)))
    store.record_dismissal("acme/shop", 2, "bbbb0002", "bob", "cost is not a concern here")

    md = report_markdown(store, "acme/shop", 30, now=clock.t + 1)
    assert "| Findings shown | 1 |" in md and "cost is not a concern here" in md
    assert "$0.25 · $0.25 per reviewed ADR" in md
    ninety = report_for(store, None, Window.last_days(90, clock.t + 1))
    assert (ninety.adrs_reviewed, ninety.findings_shown, ninety.findings_dismissed) == (2, 2, 1)
    assert "フィードバックレポート" in report_markdown(store, None, 90, now=clock.t + 1, language="ja")
    store.close()


@pytest.mark.parametrize("days", [0, -3])
def test_a_window_must_have_a_length(days: float) -> None:
    with pytest.raises(ValueError, match="days must be positive"):
        Window.last_days(days, 0.0)
