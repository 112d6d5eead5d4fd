"""The Devil's Advocate's relevance-weighted draw inside the blind-spot DAG: the weights are recorded with
the seed, and each counter-argument's perspective reaches its Finding (for "most dismissed perspectives")."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

from adr_review.config import BlindSpotConfig
from adr_review.core.adr import Adr, parse_adr
from adr_review.core.perspectives import WEIGHT_FLOOR, draw_perspectives, perspective_weights
from adr_review.core.serde import blindspots_from_dict, blindspots_to_dict
from adr_review.pipeline.adr.blindspot import CRITIC_PROMPTS, JUDGE_PROMPT, run_blindspots
from adr_review.pipeline.ports import LlmError, LlmRequest
from adr_review.prompts import packaged
from tests.fakes.blindspot_answers import da_answer, judge_echo_answer, pm_answer
from tests.fakes.llm import FakeLlm

DA, PM = CRITIC_PROMPTS["devils_advocate"], CRITIC_PROMPTS["premortem"]

ADR_PRIVACY = b"""# ADR-0042: Keep customer profiles for recommendations

* Status: Proposed

## Context
Marketing wants personalised recommendations, so we collect personal data (purchase history, location).

## Decision
We will keep one profile per customer. Users give consent at sign-up; under GDPR they can ask for erasure.
PII is pseudonymised before it is sent to the recommendation vendor.

## Consequences
- The legal team must review the data processing agreement.
"""
QUOTE = "We will keep one profile per customer."


@pytest.fixture
def adr() -> Adr:
    return parse_adr("0042-customer-profiles.md", ADR_PRIVACY)


def drawn_ids(request: LlmRequest) -> list[str]:
    return re.findall(r"^\s*- `([a-z_]+)` — ", request.system, re.MULTILINE)


def da_through_drawn(request: LlmRequest) -> dict[str, Any]:
    """Counter-arguments naming the 1st drawn id, the 2nd as the model might spell it, and an undrawn id."""
    first, second, _third = drawn_ids(request)
    answer = da_answer(("Profiles outlive consent", "No erasure path", "Vendor keeps the data"), quote=QUOTE)
    labels = [first, f" {second.upper().replace('_', '-')} ", "not_a_drawn_perspective"]
    for item, label in zip(answer["counter_arguments"], labels, strict=True):
        item["perspective"] = label
    return answer


def run(adr: Adr, fake: FakeLlm, seed: int = 11):
    return run_blindspots(
        adr, (), fake, config=BlindSpotConfig(max_findings=20), seed=seed, prompts=packaged()
    )


def fake_llm(judge: Any = None) -> FakeLlm:
    fake = FakeLlm().on(DA, da_through_drawn).on(PM, pm_answer(quote=QUOTE))
    return fake.on(JUDGE_PROMPT, judge or (lambda r: judge_echo_answer(r.user)))


def test_the_result_records_the_weights_the_draw_used(adr: Adr, caplog: pytest.LogCaptureFixture) -> None:
    constitution = packaged().constitution()
    weights = perspective_weights(constitution, adr.text)
    assert weights["privacy"] > WEIGHT_FLOOR and weights["compliance"] > WEIGHT_FLOOR
    with caplog.at_level(logging.INFO, logger="adr_review.pipeline.adr.blindspot"):
        result = run(adr, fake_llm(), seed=11)
    assert result.perspective_weights == weights
    assert result.selected_perspectives == tuple(
        p.id for p in draw_perspectives(constitution, 11, 3, weights)
    )
    (record,) = [r for r in caplog.records if r.getMessage() == "constitution_perspectives_selected"]
    assert record.__dict__["weights"] == weights and record.__dict__["seed"] == 11


def test_the_devils_advocate_findings_carry_their_drawn_perspective(adr: Adr) -> None:
    fake = fake_llm()
    result = run(adr, fake)
    first, second, _ = drawn_ids(fake.requests(DA)[0])
    assert result.status == "judged"
    by_title = {f.title: f for f in result.findings}
    assert by_title["Profiles outlive consent"].perspective == first
    assert by_title["No erasure path"].perspective == second  # case, `-` and spaces folded
    assert by_title["Vendor keeps the data"].perspective is None  # not one of the drawn: unknown
    assert {f.perspective for f in result.findings if f.source == ("premortem",)} == {None}


def test_an_unjudged_run_keeps_the_critics_perspectives(adr: Adr) -> None:
    fake = fake_llm(judge=LlmError("timeout", "request timed out"))
    result = run(adr, fake)
    first = drawn_ids(fake.requests(DA)[0])[0]
    assert result.status == "unjudged"
    assert {f.title: f.perspective for f in result.findings}["Profiles outlive consent"] == first


def test_a_judged_finding_without_merged_ids_has_no_perspective(adr: Adr) -> None:
    def judge(request: LlmRequest) -> dict[str, Any]:
        answer = judge_echo_answer(request.user)
        for f in answer["findings"]:
            f["merged_ids"] = []
        return answer

    result = run(adr, fake_llm(judge=judge))
    assert result.findings and {f.perspective for f in result.findings} == {None}


def test_weights_and_perspectives_survive_serde_and_old_results_stay_readable(adr: Adr) -> None:
    result = run(adr, fake_llm())
    data = json.loads(json.dumps(blindspots_to_dict(result)))
    assert data["perspective_weights"]["privacy"] > WEIGHT_FLOOR
    assert any(f["perspective"] for f in data["findings"])
    assert blindspots_from_dict(data) == result
    # a result stored before weights and perspectives existed
    del data["perspective_weights"]
    for f in data["findings"]:
        del f["perspective"]
    old = blindspots_from_dict(data)
    assert old.perspective_weights == {}
    assert {f.perspective for f in old.findings} == {None}
    assert old.selected_perspectives == result.selected_perspectives
