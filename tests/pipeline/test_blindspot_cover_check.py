"""The independent check of an unsure Judge exclusion (issue 24, CoVe-style), through the scripted fake
model and on to the comment: only a `yes` keeps an exclusion; `no`, `partly` or an answer that is not
JSON shows the finding. Shared terms never accept a claim on their own (benchmarks/judge_band.py): a claim
with every term in common is asked too; only a clear rejection (below the lower edge) makes no call, and
neither does a review with nothing to check."""

from __future__ import annotations

from typing import Any

import pytest

from adr_review.core.adr import Adr
from adr_review.core.finding_checks import UNSURE_SUBJECT_OVERLAP, subject_overlap
from adr_review.core.results import Finding
from adr_review.pipeline.adr.blindspot_cover import COVER_CHECK_PROMPT
from adr_review.pipeline.adr.blindspot_nodes import UNTRUSTED_ADR_RULE
from tests.fakes.blindspot_answers import da_answer
from tests.fakes.llm import FakeLlm
from tests.pipeline.test_blindspot import DA, JUDGE, adr, happy, judge_with, run
from tests.pipeline.test_blindspot_judge import comment

__all__ = ["adr"]  # the fixture, used by name

CHECK = COVER_CHECK_PROMPT
COSTS = "Costs grow linearly with the number of ADRs reviewed."  # ADR_EN's Consequences
# Three critic findings against that one passage: all the same words on its subject (CLEAR: at the old
# accept level and above, asked all the same), one shared term of three (1/3), none at all (rejected).
CLEAR, UNSURE, OFF = "Costs grow with every ADR", "No cost ceiling", "Nobody is alerted"
GAPS = {
    CLEAR: "Costs grow linearly with the number of ADRs reviewed, and nothing caps them.",
    UNSURE: "No cost ceiling.",
    OFF: "Nobody is alerted when the monthly bill doubles.",
}
JUDGE_REASONING = "The Judge thinks the Consequences bullet settles the budget question."


def critics(titles: list[str]) -> dict[str, Any]:
    answer = da_answer(titles)
    for item in answer["counter_arguments"]:
        item["gap"] = GAPS[item["title"]]
    return answer


def judge_excluding(*ids: str) -> dict[str, Any]:
    excluded = [{"id": i, "quote": COSTS} for i in ids]
    return judge_with([], excluded=excluded, self_assessment=JUDGE_REASONING)


def reviewed(adr: Adr, fake: FakeLlm, titles: list[str], *ids: str):
    return run(adr, fake.on(DA, critics(titles)).on(JUDGE, judge_excluding(*ids)))


def overlap(adr: Adr, title: str) -> float:
    quote = "We will call a hosted LLM"
    f = Finding(("devils_advocate",), title, "high", "revise_adr", quote, "", GAPS[title], "", "")
    return subject_overlap(COSTS, f, adr.title)


def test_the_fixture_findings_fall_where_the_names_say(adr: Adr) -> None:
    assert overlap(adr, CLEAR) == 1.0
    assert UNSURE_SUBJECT_OVERLAP <= overlap(adr, UNSURE) < 1.0
    assert overlap(adr, OFF) < UNSURE_SUBJECT_OVERLAP


def test_an_unsure_exclusion_the_check_confirms_stays_excluded_and_the_comment_says_so(adr: Adr) -> None:
    fake = happy().on(CHECK, {"covers": "yes", "reason": "It names the cost growth."})
    result = reviewed(adr, fake, [UNSURE], "da-1")

    assert [x.title for x in result.exclusions] == [UNSURE]
    assert UNSURE not in [f.title for f in result.findings]
    assert result.dropped["judge_excluded_confirmed"] == 1
    assert result.dropped["judge_excluded_as_covered"] == 1
    (request,) = fake.requests(CHECK)
    sent = request.system + request.user
    # only the finding and the passage, after the untrusted-data rule; never the Judge's reasoning
    assert GAPS[UNSURE] in sent and COSTS in sent
    assert sent.index(UNTRUSTED_ADR_RULE) < sent.index(COSTS)
    assert JUDGE_REASONING not in sent and "We write many ADRs" not in sent  # nor the Context
    assert request.shared_prefix is None  # nor the ADR document the other nodes share
    assert result.usage_by_node["cover_check"].calls == 1  # paid for, counted
    assert (
        "1 of them confirmed by an independent check call that was shown only the finding and the passage"
        in (comment(adr, result, "en"))
    )
    assert "うち 1 件は指摘と箇所だけを渡した独立した確認呼び出しでも対応済みと確認されました。" in comment(
        adr, result, "ja"
    )


@pytest.mark.parametrize(
    "answer",
    [
        {"covers": "no", "reason": "It is about growth, not a ceiling."},
        {"covers": "partly", "reason": "It names costs, not a cap."},
        "The passage covers it.",  # not JSON
        {"covers": "maybe", "reason": "?"},  # not one of the labels
    ],
    ids=["no", "partly", "not-json", "unknown-label"],
)
def test_an_unsure_exclusion_the_check_does_not_confirm_is_shown(adr: Adr, answer: Any) -> None:
    fake = happy().on(CHECK, answer)
    result = reviewed(adr, fake, [UNSURE], "da-1")

    assert fake.count(CHECK) >= 1  # asked (a broken answer may be asked once more)
    assert UNSURE in [f.title for f in result.findings]  # fail open: shown
    assert result.exclusions == ()
    assert result.dropped["judge_exclusion_not_confirmed"] == 1
    assert result.dropped["judge_excluded_confirmed"] == 0
    assert "1 “already covered” claim of the Judge did not hold" in comment(adr, result, "en")


def test_every_claim_from_the_lower_edge_up_is_checked_only_a_clear_rejection_makes_no_call(
    adr: Adr,
) -> None:
    # Kuma MADR 099's kind: a passage sharing every term (above the old accept level, 0.35) that the
    # check finds covers nothing is shown, not accepted by the code
    fake = happy().on(CHECK, {"covers": "no", "reason": "Growth is not a ceiling."})
    result = reviewed(adr, fake, [CLEAR, UNSURE, OFF], "da-1", "da-2", "da-3")

    first, second = fake.requests(CHECK)  # one call each for the two above the lower edge
    assert GAPS[CLEAR] in first.user and GAPS[UNSURE] in second.user
    assert not [r for r in fake.requests(CHECK) if GAPS[OFF] in r.user]
    assert result.exclusions == ()
    shown = [f.title for f in result.findings]
    assert CLEAR in shown and UNSURE in shown and OFF in shown  # by the check / by the code (no call)
    assert result.dropped["judge_exclusion_off_subject"] == 1
    assert result.dropped["judge_exclusion_not_confirmed"] == 2


def test_a_claim_with_every_term_in_common_holds_once_the_check_confirms_it(adr: Adr) -> None:
    fake = happy().on(CHECK, {"covers": "yes", "reason": "It says costs grow with every ADR."})
    result = reviewed(adr, fake, [CLEAR], "da-1")
    assert fake.count(CHECK) == 1
    assert [x.title for x in result.exclusions] == [CLEAR]
    assert result.dropped["judge_excluded_confirmed"] == 1


def test_a_clear_rejection_makes_no_check_call(adr: Adr) -> None:
    fake = happy()  # no reply scripted for the check: a call would raise in the fake and be logged
    result = reviewed(adr, fake, [OFF], "da-1")
    assert fake.count(CHECK) == 0
    assert "cover_check" not in result.usage_by_node
    assert not [e for e in result.errors if e.node == "cover_check"]


def test_a_review_without_exclusions_makes_no_check_call(adr: Adr) -> None:
    fake = happy()
    run(adr, fake)
    assert fake.count(CHECK) == 0
    assert set(fake.counts()) == {DA, "blindspot-premortem", JUDGE}


def test_a_failed_check_shows_the_finding_and_says_the_check_failed(adr: Adr) -> None:
    from adr_review.core.results import Usage
    from adr_review.pipeline.ports import LlmError

    fake = happy().on(CHECK, LlmError("timeout", "t", Usage(model="m", calls=1)))
    result = reviewed(adr, fake, [UNSURE], "da-1")
    assert UNSURE in [f.title for f in result.findings]
    assert [e.node for e in result.errors] == ["cover_check"]
    assert result.usage_by_node["cover_check"].calls == 1  # a failed call is still paid for
