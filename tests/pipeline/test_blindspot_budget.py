"""The noise budget in the blind-spot use case (issue 17): defaults, the Judge's confidence, and a Judge
failure that must not turn into silence."""

from __future__ import annotations

from typing import Any

import pytest

from adr_review.config import BlindSpotConfig
from adr_review.core.adr import Adr
from adr_review.pipeline.adr.blindspot_answers import JudgeAnswer
from tests.pipeline.test_blindspot import JUDGE, adr, happy, jf, judge_with, run

__all__ = ["adr"]  # the fixture, used by name


def distinct(n: int, **kw: Any) -> list[dict[str, Any]]:
    """n findings whose titles the code dedupe keeps apart."""
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    return [jf(f"Finding {w} stands alone", **kw) for w in words[:n]]


def test_the_defaults_are_five_findings_at_confidence_half_or_more() -> None:
    config = BlindSpotConfig()
    assert (config.max_findings, config.min_confidence) == (5, 0.5)


def test_by_default_at_most_five_are_shown_and_the_rest_counted(adr: Adr) -> None:
    fake = happy().on(JUDGE, judge_with(distinct(8)))
    result = run(adr, fake, config=BlindSpotConfig())
    assert len(result.findings) == 5
    assert (result.omitted_count, result.low_confidence_count) == (3, 0)


@pytest.mark.parametrize(
    ("confidences", "threshold", "shown", "unsure"),
    [
        ([0.9, 0.5, 0.49, 0.1], 0.5, 2, 2),
        ([0.9, 0.5, 0.49, 0.1], 0.0, 4, 0),
        ([0.9, 0.5, 0.49, 0.1], 0.95, 0, 4),
    ],
)
def test_judged_findings_below_the_threshold_are_held_back_and_counted(
    adr: Adr, confidences: list[float], threshold: float, shown: int, unsure: int
) -> None:
    items = [dict(f, confidence=c) for f, c in zip(distinct(len(confidences)), confidences, strict=True)]
    fake = happy().on(JUDGE, judge_with(items))
    result = run(adr, fake, config=BlindSpotConfig(min_confidence=threshold))
    assert result.status == "judged"
    assert (len(result.findings), result.low_confidence_count, result.omitted_count) == (shown, unsure, 0)
    assert sum(result.total_count_by_severity.values()) == len(confidences)


def test_shown_findings_are_ordered_by_severity_then_confidence(adr: Adr) -> None:
    items = [
        dict(f, severity=s, confidence=c)
        for f, (s, c) in zip(
            distinct(4), [("medium", 0.95), ("high", 0.6), ("high", 0.9), ("low", 0.99)], strict=True
        )
    ]
    result = run(adr, happy().on(JUDGE, judge_with(items)), config=BlindSpotConfig())
    assert [(f.severity, f.confidence) for f in result.findings] == [
        ("high", 0.9),
        ("high", 0.6),
        ("medium", 0.95),
        ("low", 0.99),
    ]


def test_an_unjudged_run_is_capped_but_never_held_back_for_confidence(adr: Adr) -> None:
    fake = happy().on(JUDGE, "not json at all")
    result = run(adr, fake, config=BlindSpotConfig(min_confidence=1.0, max_findings=100))
    assert result.status == "unjudged"
    assert result.findings and result.low_confidence_count == 0
    assert all(f.confidence is None for f in result.findings)


def test_the_judge_is_asked_for_a_confidence_and_a_missing_one_reads_as_unscored() -> None:
    schema = JudgeAnswer.model_json_schema()
    assert "confidence" in str(schema)
    answer = JudgeAnswer.model_validate(judge_with([{k: v for k, v in jf("x").items() if k != "confidence"}]))
    assert answer.findings[0].confidence is None
    assert answer.findings[0].finding(("devils_advocate",)).confidence is None
    assert JudgeAnswer.model_validate(judge_with([jf("x", confidence="0.7")])).findings[0].confidence == 0.7
