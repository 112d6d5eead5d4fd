"""The Judge's "already covered" claims (app/adr_review/core/finding_checks.py): a claim holds only when its passage
is verbatim in the ADR, stands in a section that can cover a risk, and is about the finding's subject."""

from __future__ import annotations

import pytest

from adr_review.core.adr import Adr, parse_adr
from adr_review.core.finding_checks import (
    COVERING_SECTIONS,
    UNSURE_SUBJECT_OVERLAP,
    check_exclusion,
    covering_section,
    dropped_by_judge,
    judge_exclusions,
    settle_unsure,
    subject_overlap,
)
from adr_review.core.results import Finding

ADR_EN = parse_adr(
    "0042-queue.md",
    b"""# ADR-0042: Queue the reviews

## Status
Proposed

## Context
Reviews are slow because one reviewer reads every ADR by hand.

## Decision
Reviews run on a queue with three workers.

## Consequences
- A slow model call blocks one worker for its whole timeout.

## Risks
* Reviewers may stop reading long comments and miss the findings that matter.

## Alternatives
1. Keep one reviewer and accept the slow reviews.

## Rollback
Switch the queue off and return to the manual review.
""",
)
ADR_JA = parse_adr(
    "0043-queue.md",
    """# ADR-0043: レビューをキューで回す

## コンテキスト
担当者が一人で全ての ADR を手で読んでおり、アラート疲労で指摘が読まれなくなっている。

## 決定
レビューは 3 つのワーカーを持つキューで実行する。

## 結果
- モデル呼び出しが遅いと、タイムアウトまでワーカーが 1 つ塞がる。

## リスク
- 長いコメントが続くとアラート疲労で指摘が読まれなくなる。

## 代替案
1. 担当者一人のまま、遅いレビューを受け入れる。

## ロールバック
キューを止めて手作業のレビューに戻す。
""".encode(),
)


def finding(quote: str, gap: str, title: str = "a finding") -> Finding:
    return Finding(("premortem",), title, "medium", "add_to_risks", quote, "", gap, "", "")


@pytest.mark.parametrize(
    ("quote", "section"),
    [
        ("Reviews are slow because one reviewer reads every ADR by hand.", None),  # Context covers nothing
        ("ADR-0042: Queue the reviews", None),  # the title
        ("Reviews run on a queue with three workers.", "decision"),
        ("A slow model call blocks one worker for its whole timeout.", "consequences"),
        ("Reviewers may stop reading long comments and miss the findings that matter.", "risks"),
        ("* Reviewers may stop reading long comments and miss the findings that matter.", "risks"),
        ("Keep one reviewer and accept the slow reviews.", "alternatives"),
        ("1. Keep one reviewer and accept the slow reviews.", "alternatives"),
        ("Switch the queue off and return to the manual review.", "rollback"),
        ("Switch the queue off and return to a manual review.", None),  # not verbatim
    ],
)
def test_only_the_sections_that_can_cover_a_risk_count(quote: str, section: str | None) -> None:
    assert covering_section(quote, ADR_EN) == section


@pytest.mark.parametrize(
    ("quote", "section"),
    [
        ("担当者が一人で全ての ADR を手で読んでおり、アラート疲労で指摘が読まれなくなっている。", None),
        ("レビューは 3 つのワーカーを持つキューで実行する。", "decision"),
        ("モデル呼び出しが遅いと、タイムアウトまでワーカーが 1 つ塞がる。", "consequences"),
        ("- 長いコメントが続くとアラート疲労で指摘が読まれなくなる。", "risks"),
        ("担当者一人のまま、遅いレビューを受け入れる。", "alternatives"),
        ("キューを止めて手作業のレビューに戻す。", "rollback"),
    ],
)
def test_japanese_sections_are_the_same_five(quote: str, section: str | None) -> None:
    assert covering_section(quote, ADR_JA) == section


def test_the_covering_sections_are_exactly_five() -> None:
    assert set(COVERING_SECTIONS) == {"risks", "consequences", "alternatives", "decision", "rollback"}


ON_TIMEOUTS = finding(
    "Reviews run on a queue with three workers.", "A long model call holds a worker until its timeout."
)
ON_READING = finding(
    "Reviews run on a queue with three workers.",
    "Long comments go unread, so findings that matter are missed.",
)
ON_FATIGUE_JA = finding(
    "レビューは 3 つのワーカーを持つキューで実行する。",
    "指摘が多いとアラート疲労で読まれなくなる。",
)


@pytest.mark.parametrize(
    ("adr", "quote", "about", "rejected", "covered_in"),
    [
        # the done-when: a verbatim Context sentence on the very subject still covers nothing
        (
            ADR_EN,
            "Reviews are slow because one reviewer reads every ADR by hand.",
            ON_READING,
            "not_covering_section",
            "",
        ),
        (
            ADR_EN,
            "A slow model call blocks one worker for its whole timeout.",
            ON_TIMEOUTS,
            None,
            "consequences",
        ),
        (
            ADR_EN,
            "A slow model call blocks one worker for its whole timeout.",
            ON_READING,
            "off_subject",
            "consequences",
        ),
        (
            ADR_EN,
            "Reviewers may stop reading long comments and miss the findings that matter.",
            ON_READING,
            None,
            "risks",
        ),
        (ADR_EN, "Retries follow the platform's default policy.", ON_TIMEOUTS, "not_verbatim", ""),
        (ADR_JA, "長いコメントが続くとアラート疲労で指摘が読まれなくなる。", ON_FATIGUE_JA, None, "risks"),
        (
            ADR_JA,
            "担当者が一人で全ての ADR を手で読んでおり、アラート疲労で指摘が読まれなくなっている。",
            ON_FATIGUE_JA,
            "not_covering_section",
            "",
        ),
        (ADR_JA, "キューを止めて手作業のレビューに戻す。", ON_FATIGUE_JA, "off_subject", "rollback"),
    ],
)
def test_an_exclusion_holds_in_a_covering_section_on_the_findings_subject(
    adr: Adr, quote: str, about: Finding, rejected: str | None, covered_in: str
) -> None:
    verdict = check_exclusion(quote, about, adr)
    assert (verdict.rejected, verdict.covered_in) == (rejected, covered_in)


@pytest.mark.parametrize(
    ("passage", "quote", "gap", "overlap"),
    [
        ("alpha bravo charlie", "alpha", "delta echo", 1 / 3),  # one term in three: another subject
        ("alpha bravo charlie delta echo", "alpha bravo", "kilo lima mike november oscar", 0.4),
        ("alpha bravo", "alpha bravo", "charlie", 1.0),
        ("the of and", "alpha", "bravo", 0.0),  # nothing but function words
        ("timeouts block workers", "a worker is blocked", "until its timeout", 2 / 3),  # plurals fold
    ],
)
def test_subject_overlap_is_the_share_of_shared_content_terms(
    passage: str, quote: str, gap: str, overlap: float
) -> None:
    assert subject_overlap(passage, finding(quote, gap)) == pytest.approx(overlap)


def test_the_adrs_title_terms_say_nothing_about_the_subject() -> None:
    # "キュー" and "レビュー" are in the title and in every passage: the rollback sentence shares only them
    passage = "キューを止めて手作業のレビューに戻す。"
    assert subject_overlap(passage, ON_FATIGUE_JA) >= UNSURE_SUBJECT_OVERLAP  # would reach the check
    assert subject_overlap(passage, ON_FATIGUE_JA, ADR_JA.title) == 0.0
    # a passage of nothing but title terms is compared on them rather than on nothing
    assert subject_overlap("Queue the reviews", finding("queue", "reviews"), "Queue the reviews") == 1.0


def test_no_overlap_accepts_a_claim_on_its_own() -> None:
    # benchmarks/judge_band.py: off-subject pairs reach 1.0 in every corpus (a finding against the very
    # sentence it quotes), so not even every term in common lets the code accept without the check
    about = finding(TIMEOUT, "A slow model call blocks one worker for its whole timeout.")
    assert subject_overlap(TIMEOUT, about, ADR_EN.title) == 1.0
    claims = judge_exclusions([("pm-1", TIMEOUT)], {"pm-1": about}, ADR_EN)
    assert (claims.exclusions, [u.fid for u in claims.unsure]) == ((), ["pm-1"])
    settled = settle_unsure(claims, (False,))  # the check says no: the finding is shown
    assert (settled.exclusions, settled.restored) == ((), (about,))


def test_claims_that_do_not_hold_put_the_finding_back_and_are_counted_by_why() -> None:
    made_up = finding("Reviews run on a queue with three workers.", "Retries are undefined.")
    by_id = {"pm-1": ON_TIMEOUTS, "pm-2": ON_READING, "pm-3": ON_FATIGUE_JA, "pm-4": made_up}
    result = judge_exclusions(
        [
            ("pm-1", "A slow model call blocks one worker for its whole timeout."),  # to the check
            ("pm-2", "Reviews are slow because one reviewer reads every ADR by hand."),  # Context
            ("pm-3", "A slow model call blocks one worker for its whole timeout."),  # another subject
            ("pm-4", "Retries follow the platform's default policy."),  # the ADR does not say it
            ("pm-9", "A slow model call blocks one worker for its whole timeout."),  # no such finding
        ],
        by_id,
        ADR_EN,
    )
    assert result.exclusions == ()  # only the independent check can make it hold (settle_unsure)
    assert [
        (u.fid, u.exclusion.quote, u.exclusion.section, u.exclusion.covered_in) for u in result.unsure
    ] == [
        ("pm-1", "A slow model call blocks one worker for its whole timeout.", "Consequences", "consequences")
    ]
    assert result.restored == (ON_READING, ON_FATIGUE_JA, made_up)
    assert result.rejected == {
        "not_covering_section": 1,
        "off_subject": 1,
        "not_verbatim": 1,
        "unknown_id": 1,
    }


def test_a_claim_on_a_finding_the_judge_merged_is_not_shown_twice() -> None:
    result = judge_exclusions(
        [("pm-2", "Reviews are slow because one reviewer reads every ADR by hand.")],
        {"pm-2": ON_READING},
        ADR_EN,
        shown_ids=["pm-2"],
    )
    assert (result.exclusions, result.restored, result.rejected) == ((), (), {"not_covering_section": 1})


@pytest.mark.parametrize(
    ("critics", "merged", "claimed", "dropped"),
    [
        (["da-1", "pm-1", "pm-2"], ["da-1"], ["pm-1"], ("pm-2",)),
        (["da-1", "pm-1"], [], [], ("da-1", "pm-1")),  # a Judge that keeps and excludes nothing
        (["da-1", "pm-1"], ["da-1", "pm-1", "zz-9"], [], ()),
        ([], ["da-1"], ["pm-1"], ()),
    ],
)
def test_what_the_judge_neither_kept_nor_claimed_is_dropped(
    critics: list[str], merged: list[str], claimed: list[str], dropped: tuple[str, ...]
) -> None:
    assert dropped_by_judge(critics, merged, claimed) == dropped


# --- from the lower edge up: the independent check decides (app/adr_review/pipeline/adr/blindspot_cover.py) ----------

TIMEOUT = "A slow model call blocks one worker for its whole timeout."  # Consequences
Q = "Reviews run on a queue with three workers."
ON_RETRIES = finding(Q, "Retries of a failed call pile up.")  # 2 shared terms of 8: 0.25
ON_BOUNDS = finding(Q, "Nothing bounds the retries.")  # 1 of 6: 0.167
# Kuma MADR 099's kind (benchmarks/judge_band.py): the Judge quotes the very Decision sentence the finding
# argues with. Every term of it is shared (1.0, above the old accept level 0.35), and it covers nothing.
ON_WORKERS = finding(Q, "Three workers are too few when reviews arrive in bursts.")


@pytest.mark.parametrize(
    ("quote", "about", "overlap", "rejected"),
    [
        (TIMEOUT, ON_TIMEOUTS, 0.5, None),  # on its subject: still only the check accepts it
        (Q, ON_WORKERS, 1.0, None),  # the finding's own quote, covering nothing: to the check
        (TIMEOUT, ON_RETRIES, 0.25, None),  # few terms in common: to the check
        (TIMEOUT, ON_BOUNDS, 1 / 6, "off_subject"),  # below the lower edge: the code rejects
    ],
)
def test_from_the_lower_edge_up_the_check_decides_below_it_the_code_rejects(
    quote: str, about: Finding, overlap: float, rejected: str | None
) -> None:
    assert subject_overlap(quote, about, ADR_EN.title) == pytest.approx(overlap)
    assert check_exclusion(quote, about, ADR_EN).rejected == rejected
    claims = judge_exclusions([("pm-1", quote)], {"pm-1": about}, ADR_EN)
    assert claims.exclusions == ()  # nothing holds before the check has said yes
    assert [u.fid for u in claims.unsure] == ([] if rejected else ["pm-1"])
    assert claims.restored == ((about,) if rejected else ())


def test_the_lower_edge_lies_below_the_band_and_above_most_off_subject_pairs() -> None:
    # tests/evals/test_judge_exclusion_threshold.py pins what the golden pairs score in it
    assert 0.0 < UNSURE_SUBJECT_OVERLAP < 0.25


def test_an_unsure_claim_waits_for_the_check_neither_excluded_nor_restored() -> None:
    result = judge_exclusions([("pm-1", TIMEOUT)], {"pm-1": ON_RETRIES}, ADR_EN)
    assert (result.exclusions, result.restored, result.rejected) == ((), (), {})
    assert [(u.fid, u.finding, u.exclusion.covered_in) for u in result.unsure] == [
        ("pm-1", ON_RETRIES, "consequences")
    ]


@pytest.mark.parametrize(
    ("confirmed", "excluded", "restored", "not_confirmed"),
    [
        ((True, True), ["retries", "retries-2"], [], 0),
        ((True, False), ["retries"], ["retries-2"], 1),
        ((False, False), [], ["retries", "retries-2"], 2),
        ((True,), ["retries"], ["retries-2"], 1),  # no verdict (past the cap): not confirmed
        ((), [], ["retries", "retries-2"], 2),
    ],
)
def test_settling_keeps_only_what_the_check_confirmed(
    confirmed: tuple[bool, ...], excluded: list[str], restored: list[str], not_confirmed: int
) -> None:
    second = finding(Q, "Retries of a failed call pile up.", title="retries-2")
    claims = judge_exclusions(
        [("pm-1", TIMEOUT), ("pm-2", TIMEOUT)],
        {"pm-1": finding(Q, "Retries of a failed call pile up.", title="retries"), "pm-2": second},
        ADR_EN,
    )
    settled = settle_unsure(claims, confirmed)
    assert [x.title for x in settled.exclusions] == excluded
    assert [f.title for f in settled.restored] == restored
    assert settled.rejected.get("not_confirmed", 0) == not_confirmed
    assert (settled.confirmed, settled.unsure) == (len(excluded), ())


def test_an_unconfirmed_claim_on_a_merged_finding_is_not_shown_twice() -> None:
    claims = judge_exclusions([("pm-1", TIMEOUT)], {"pm-1": ON_RETRIES}, ADR_EN, shown_ids=["pm-1"])
    settled = settle_unsure(claims, (False,))
    assert (settled.exclusions, settled.restored, settled.rejected) == ((), (), {"not_confirmed": 1})
