"""The comment says how many findings the noise budget held back, and why (issue 17)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from adr_review.core.render import render_comment
from adr_review.core.results import Review
from tests.core.test_render import LINK_BASE, english_review, japanese_review


def held_back(base: Callable[[], Review], unsure: int, over: int) -> Review:
    r = base()
    assert r.blindspots is not None
    blind = dataclasses.replace(r.blindspots, low_confidence_count=unsure, omitted_count=over)
    return dataclasses.replace(r, blindspots=blind)


@pytest.mark.parametrize(
    ("base", "unsure", "over", "line"),
    [
        (english_review, 2, 0, "2 more findings not shown (2 below the Judge's confidence threshold)."),
        (english_review, 0, 3, "3 more findings not shown (3 beyond the display limit)."),
        (
            english_review,
            1,
            4,
            "5 more findings not shown (1 below the Judge's confidence threshold; 4 beyond the display limit).",
        ),
        (
            japanese_review,
            2,
            0,
            "ほかに 2 件の指摘を表示していません (Judge の確信度がしきい値未満の 2 件)。",
        ),
        (
            japanese_review,
            1,
            4,
            "ほかに 5 件の指摘を表示していません (Judge の確信度がしきい値未満の 1 件; 表示上限を超えた 4 件)。",
        ),
    ],
)
def test_the_comment_says_how_many_it_held_back_and_why(
    base: Callable[[], Review], unsure: int, over: int, line: str
) -> None:
    body = render_comment(held_back(base, unsure, over), link_base=LINK_BASE)
    assert f"<sub>{line}</sub>" in body


@pytest.mark.parametrize("base", [english_review, japanese_review])
def test_nothing_held_back_says_nothing(base: Callable[[], Review]) -> None:
    body = render_comment(held_back(base, 0, 0), link_base=LINK_BASE)
    assert "confidence threshold" not in body and "確信度" not in body


def test_every_finding_held_back_still_says_why() -> None:
    r = held_back(english_review, 3, 0)
    assert r.blindspots is not None
    r = dataclasses.replace(r, blindspots=dataclasses.replace(r.blindspots, findings=()))
    body = render_comment(r, link_base=LINK_BASE)
    assert "3 more findings not shown (3 below the Judge's confidence threshold)." in body
