"""The cover-check suite scores what production keeps: the recorded label must be the expected one and
the exclusion kept exactly for `yes`; a wrong label fails the case; a claim the code rejects
alone is an input error (the check would never be asked)."""

from __future__ import annotations

from typing import Any

import pytest

from adr_review.core.results import Usage
from adr_review.evals.golden.cases import GoldenError, golden_dir, load_cases, load_recording
from adr_review.evals.golden.suite_cover import CoverCheckSuite
from adr_review.pipeline.adr.blindspot_cover import COVER_CHECK_PROMPT
from adr_review.pipeline.ports import LlmRequest, LlmResponse
from adr_review.prompts import PROMPTS_DIR, PromptFiles

PROMPT = PromptFiles(PROMPTS_DIR).prompt(COVER_CHECK_PROMPT)
CASES, _ = load_cases(golden_dir(PROMPT))
SUITE = CoverCheckSuite()


def answering(data: dict[str, Any]):
    def answer(request: LlmRequest) -> LlmResponse:
        return LlmResponse(text="", usage=Usage(calls=1), data=data)

    return answer


def test_the_cases_cover_every_label() -> None:
    assert sorted({c.expect["covers"] for c in CASES}) == ["no", "partly", "yes"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_recorded_answer_passes_and_a_wrong_label_fails(case: Any) -> None:
    recording = load_recording(golden_dir(PROMPT), case.id)
    assert recording is not None
    ok = SUITE.evaluate(case, PROMPT, lambda _r: recording.response())
    assert ok.status == "ok" and ok.score is not None and not ok.score.failures
    wrong = "no" if case.expect["covers"] == "yes" else "yes"
    bad = SUITE.evaluate(case, PROMPT, answering({"covers": wrong, "reason": "r"}))
    assert bad.score is not None and len(bad.score.failures) == 2  # the label, and what was kept


def test_a_claim_the_code_rejects_alone_is_an_input_error_one_with_the_same_words_is_asked() -> None:
    same = CASES[0].model_copy(deep=True)
    same.input["finding"]["gap"] = same.input["passage"]  # every term shared: asked all the same
    assert same.input["passage"] in SUITE.request(same, PROMPT).user
    off = CASES[0].model_copy(deep=True)
    off.input["finding"].update(
        quote="This MADR supersedes MADR 093 to allow multiple meshes per namespace",
        gap="Zebras graze at dawn.",
    )
    with pytest.raises(GoldenError, match="does not reach the check"):
        SUITE.request(off, PROMPT)
