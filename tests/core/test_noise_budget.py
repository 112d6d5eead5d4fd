"""The noise budget (issue 17): Judge confidence, the threshold and cap, the order, severity-5 scenarios,
and the code-level dedupe on equal `dedupe_group`s."""

from __future__ import annotations

import pytest

from adr_review.core.findings import (
    clamp_confidence,
    dedupe_findings,
    premortem_severity,
)
from adr_review.core.noise_budget import budget_findings, rank_findings
from adr_review.core.results import Finding


def finding(title: str, severity: str = "medium", confidence: float | None = None, **kw: object) -> Finding:
    base: dict[str, object] = {
        "source": ("devils_advocate",),
        "title": title,
        "severity": severity,
        "actionability": "add_to_risks",
        "quote": f"quote for {title}",
        "section": "Decision",
        "gap": f"gap for {title}",
        "suggested_action": "do something",
        "dedupe_group": "",
        "confidence": confidence,
    }
    base.update(kw)
    return Finding(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (0.7, 0.7),
        (0, 0.0),
        (1, 1.0),
        ("0.4", 0.4),
        (80, 0.8),  # a percentage
        (100, 1.0),
        (250, 1.0),
        (-0.3, 0.0),
        (None, None),
        ("sure", None),
        (True, None),
        (float("nan"), None),
    ],
)
def test_confidence_is_read_tolerantly(raw: object, expected: float | None) -> None:
    assert clamp_confidence(raw) == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(
    ("scores", "severity"),
    [
        ((5, 1, 5), "high"),  # rare but catastrophic: RPN 25 would be "medium"
        ((5, 1, 1), "high"),  # RPN 5 would be "low"
        ((5, 5, 5), "critical"),  # already above the floor: kept
        ((5, 3, 5), "critical"),
        ((4, 1, 5), "medium"),  # no floor below severity 5: RPN 20 -> medium
        ((3, 3, 3), "high"),  # 27: by risk priority as before
        ((2, 2, 1), "low"),
        (("9", 1, 1), "high"),  # clamped to 5 first
    ],
)
def test_a_severity_5_scenario_is_flagged_whatever_its_risk_priority(
    scores: tuple[object, object, object], severity: str
) -> None:
    assert premortem_severity(*scores) == severity


def test_the_severity_5_floor_holds_with_configured_thresholds() -> None:
    assert premortem_severity(5, 2, 2, {"critical": 100, "high": 90, "medium": 50}) == "high"
    assert premortem_severity(4, 2, 2, {"critical": 100, "high": 90, "medium": 50}) == "low"


@pytest.mark.parametrize(
    ("findings", "order"),
    [
        # severity first, then confidence
        (
            [finding("a", "medium", 0.9), finding("b", "high", 0.6), finding("c", "high", 0.8)],
            ["c", "b", "a"],
        ),
        # un-judged (None) ranks as sure, ties keep the order they came in
        ([finding("a", "high", 0.7), finding("b", "high"), finding("c", "high")], ["b", "c", "a"]),
        # equal severity and confidence: the more urgent action first
        (
            [finding("a", "low", 0.5), finding("b", "low", 0.5, actionability="block")],
            ["b", "a"],
        ),
    ],
)
def test_findings_are_ordered_by_severity_then_confidence(findings: list[Finding], order: list[str]) -> None:
    assert [f.title for f in rank_findings(findings)] == order


@pytest.mark.parametrize(
    ("confidences", "limit", "threshold", "shown", "unsure", "over"),
    [
        ([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3], 5, 0.5, 5, 2, 0),  # 0.5 is "at or above"
        ([0.9, 0.8, 0.7, 0.6, 0.5, 0.9, 0.9], 5, 0.5, 5, 0, 2),  # all sure: the cap holds back 2
        ([0.2, 0.1], 5, 0.5, 0, 2, 0),  # nothing sure enough: nothing shown, both counted
        ([None, None, None], 2, 0.9, 2, 0, 1),  # un-judged: never held back for confidence
        ([0.3, 0.4], 5, 0.0, 2, 0, 0),  # threshold 0: confidence holds nothing back
        ([0.9, 0.1, 0.9], 0, 0.5, 0, 1, 2),
    ],
)
def test_the_noise_budget_shows_sure_findings_up_to_the_cap_and_counts_the_rest(
    confidences: list[float | None], limit: int, threshold: float, shown: int, unsure: int, over: int
) -> None:
    findings = [finding(f"distinct finding {i}", "high", c) for i, c in enumerate(confidences)]
    kept, low, beyond = budget_findings(findings, limit, threshold)
    assert (len(kept), low, beyond) == (shown, unsure, over)
    assert all(f.confidence is None or f.confidence >= threshold for f in kept)
    assert len(kept) + low + beyond == len(findings)


def test_the_budget_keeps_the_most_severe_when_it_caps() -> None:
    findings = [finding(f"distinct finding {s}", s, 0.9) for s in ("low", "critical", "medium", "high")]
    kept, _, beyond = budget_findings(findings, 2, 0.5)
    assert [f.severity for f in kept] == ["critical", "high"] and beyond == 2


@pytest.mark.parametrize(
    ("groups", "left"),
    [
        (["vendor-lock-in", "vendor-lock-in", ""], 2),
        (["Vendor Lock-in", "vendor_lock_in", "other"], 2),  # compared normalised
        (["", "", ""], 3),  # empty groups never merge (unrelated titles)
        (["a", "b", "a"], 2),  # non-adjacent equal groups merge
    ],
)
def test_the_code_dedupe_merges_equal_dedupe_groups(groups: list[str], left: int) -> None:
    titles = ["Lock-in to one vendor", "Schema drift in replicas", "Backups never restored"]
    findings = [
        finding(t, "medium", None, dedupe_group=g, source=(src,))
        for t, g, src in zip(titles, groups, ("devils_advocate", "premortem", "adjacent_domain"), strict=True)
    ]
    merged, n = dedupe_findings(findings)
    assert (len(merged), n) == (left, 3 - left)


def test_a_merge_by_group_unites_sources_and_keeps_the_higher_confidence() -> None:
    merged, n = dedupe_findings(
        [
            finding("Lock-in to one vendor", "medium", 0.6, dedupe_group="lock-in"),
            finding(
                "No exit plan from the provider", "high", 0.4, dedupe_group="lock-in", source=("premortem",)
            ),
        ]
    )
    assert n == 1
    (only,) = merged
    assert only.title == "No exit plan from the provider"  # the higher severity's text
    assert only.source == ("premortem", "devils_advocate")
    assert only.confidence == 0.6
