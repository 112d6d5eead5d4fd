"""What the Judge can and cannot make disappear (issue 24), through the scripted fake model and on to the
comment: an "already covered" claim holds only in a covering section and on the finding's subject,
unscored findings are shown, a Judge that drops findings is counted, and "no blind spots" is said only
when the critics raised none."""

from __future__ import annotations

from typing import Any

import pytest

from adr_review.config import BlindSpotConfig
from adr_review.core.adr import Adr
from adr_review.core.render import render_comment
from adr_review.core.results import BlindSpotResult, Review, RunMeta, Usage
from adr_review.pipeline.adr.blindspot_cover import COVER_CHECK_PROMPT
from adr_review.pipeline.adr.blindspot_nodes import UNTRUSTED_ADR_RULE
from tests.fakes.blindspot_answers import da_answer, judge_echo_answer
from tests.pipeline.test_blindspot import DA, JUDGE, adr, happy, jf, judge_with, run

__all__ = ["adr"]  # the fixture, used by name

CONTEXT = "We write many ADRs and reviews are slow."  # ADR_EN's Context: true, verbatim, covers nothing


def comment(adr: Adr, result: BlindSpotResult, language: str) -> str:
    review = Review(
        adr_path=adr.path,
        adr_id=adr.adr_id,
        adr_title=adr.title,
        language="en",
        recall=None,
        blindspots=result,
        skipped=(),
        meta=RunMeta("rk1-test", "blindspots:judged", ("m",), Usage(), 1.0, (), "offline"),
    )
    return render_comment(review, link_base=None, language=language)


def test_an_exclusion_quoting_a_context_sentence_that_covers_nothing_puts_the_finding_back(adr: Adr) -> None:
    critics = da_answer(["Slow reviews stay slow", "No rollback trigger", "Prompt injection"])
    critics["counter_arguments"][0]["gap"] = "Many ADRs are written and the reviews are still slow."
    judge = judge_with(
        [jf("No rollback trigger", merged_ids=["da-2"])],
        excluded=[{"id": "da-1", "quote": CONTEXT}],  # on the subject, verbatim, but in the Context
    )
    result = run(adr, happy().on(DA, critics).on(JUDGE, judge))

    assert "Slow reviews stay slow" in [f.title for f in result.findings]  # put back
    assert result.exclusions == ()
    assert result.dropped["judge_exclusion_not_covering"] == 1
    en = comment(adr, result, "en")
    assert "Already covered by the ADR" not in en
    assert "1 “already covered” claim of the Judge did not hold" in en
    ja = comment(adr, result, "ja")
    assert "ADR で対応済み" not in ja
    assert "Judge の「対応済み」判定のうち 1 件は成立しませんでした" in ja


def test_a_claim_in_a_covering_section_on_the_subject_is_listed_with_its_section(adr: Adr) -> None:
    critics = da_answer(["Costs grow with every ADR reviewed", "No rollback trigger", "Prompt injection"])
    judge = judge_with(
        [jf("No rollback trigger", merged_ids=["da-2"])],
        excluded=[{"id": "da-1", "quote": "Costs grow linearly with the number of ADRs reviewed."}],
    )
    check = {"covers": "yes", "reason": "It names the cost growth."}
    result = run(adr, happy().on(DA, critics).on(JUDGE, judge).on(COVER_CHECK_PROMPT, check))
    assert [(x.title, x.covered_in) for x in result.exclusions] == [
        ("Costs grow with every ADR reviewed", "consequences")
    ]
    assert "✅ Already covered by the ADR (1 · covered in Consequences ×1)" in comment(adr, result, "en")
    assert "✅ ADR で対応済み (1 · 対応箇所: 結果 1 件)" in comment(adr, result, "ja")


def test_unscored_findings_are_shown_and_marked(adr: Adr) -> None:
    def unscored_judge(request: Any) -> dict[str, Any]:
        answer = judge_echo_answer(request.user)
        for f in answer["findings"]:
            del f["confidence"]  # the Judge scored none of them
        return answer

    # the default noise budget: at most 5, none below confidence 0.5; unscored is not "below"
    result = run(adr, happy().on(JUDGE, unscored_judge), config=BlindSpotConfig())
    assert result.status == "judged"
    assert len(result.findings) == 5 and result.omitted_count == 2 and result.low_confidence_count == 0
    assert all(f.confidence is None for f in result.findings)
    assert comment(adr, result, "en").count("unscored (the Judge gave no confidence)") == 5
    assert comment(adr, result, "ja").count("確信度なし (Judge が未採点)") == 5


def test_a_scored_finding_is_not_marked(adr: Adr) -> None:
    result = run(adr, happy())
    assert "unscored" not in comment(adr, result, "en")


def test_a_judge_that_drops_all_says_so(adr: Adr) -> None:
    result = run(adr, happy().on(JUDGE, judge_with([])))  # keeps nothing, excludes nothing

    assert (result.findings, result.exclusions, result.raised_count) == ((), (), 7)
    assert result.dropped["judge_dropped"] == 7
    en = comment(adr, result, "en")
    assert "No blind spots found" not in en
    assert "The critics raised 7 findings; none of them is shown." in en
    assert "The Judge dropped 7 findings of the 7 the critics raised" in en
    ja = comment(adr, result, "ja")
    assert "見落としは見つかりませんでした" not in ja
    assert "批評者は 7 件を指摘しましたが" in ja
    assert "Judge は批評者の指摘 7 件のうち 7 件を除外しました" in ja


def test_a_judge_that_drops_some_says_how_many(adr: Adr) -> None:
    judge = judge_with([jf("No rollback trigger", merged_ids=["da-2", "pm-1"])])
    result = run(adr, happy().on(JUDGE, judge))
    assert result.dropped["judge_dropped"] == 5
    assert "The Judge dropped 5 findings of the 7 the critics raised" in comment(adr, result, "en")


@pytest.mark.parametrize(
    ("language", "text"), [("en", "No blind spots found"), ("ja", "見落としは見つかりませんでした")]
)
def test_no_blind_spots_only_when_the_critics_raised_none(adr: Adr, language: str, text: str) -> None:
    result = run(adr, happy().on(JUDGE, judge_with([])))
    assert text not in comment(adr, result, language)
    nothing = BlindSpotResult("judged", (), 0, {}, "", (), 1, (), (), {}, raised_count=0)
    assert text in comment(adr, nothing, language)


def test_a_finding_the_judge_adds_is_the_judges(adr: Adr) -> None:
    judge = judge_with([jf("A new concern", source=["devils_advocate", "premortem"])])  # no merged_ids
    result = run(adr, happy().on(JUDGE, judge))
    (added,) = [f for f in result.findings if f.title == "A new concern"]
    assert added.source == ("judge",)
    assert "Raised by: Judge" in comment(adr, result, "en")


def test_every_prompt_reads_the_untrusted_rule_before_the_adr(adr: Adr) -> None:
    fake = happy()
    run(adr, fake)
    assert len(fake.requests()) == 3
    for request in fake.requests():
        sent = (request.shared_prefix or "") + request.system + request.user
        assert sent.index(UNTRUSTED_ADR_RULE) < sent.index("<adr_document>"), request.prompt_name
        assert "untrusted DATA" in UNTRUSTED_ADR_RULE


@pytest.mark.parametrize("marker", ["- ", "* ", "1. "])
def test_a_quote_copied_with_its_list_marker_verifies(adr: Adr, marker: str) -> None:
    quote = "Vendor lock-in to one LLM provider."
    result = run(adr, happy().on(DA, da_answer(["Single provider"], quote=marker + quote)))
    assert result.unverified == ()
    assert quote in {f.quote for f in result.findings}  # shown without the marker
