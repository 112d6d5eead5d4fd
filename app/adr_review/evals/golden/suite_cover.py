"""The cover-check suite: the independent check of an unsure Judge exclusion, run through production.

A case is one "this passage covers that finding" claim on a real ADR. It must reach the check
(app/adr_review/core/finding_checks.py: in a covering section, subject overlap at least
UNSURE_SUBJECT_OVERLAP; no overlap accepts on its own), or the check is never asked and the case is an
input error. The claim goes through judge_exclusions, run_cover_checks and settle_unsure as in a review; the
score is whether the check gave the expected label and whether the exclusion was kept exactly when the
expected label is `yes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from adr_review.core.finding_checks import JudgeExclusions, judge_exclusions, settle_unsure
from adr_review.core.results import Finding, Usage
from adr_review.evals.golden.cases import LIBRARY_DIR, GoldenCase, GoldenError, load_library_adr
from adr_review.evals.golden.scoring import AnswerFn, CaseScore, Evaluation, ratio, step_failure, summed
from adr_review.pipeline.adr.blindspot_cover import COVER_CHECK_PROMPT, CoverChecks, run_cover_checks
from adr_review.pipeline.adr.blindspot_nodes import NodeContext, base_variables
from adr_review.pipeline.ports import LlmError, LlmRequest, LlmResponse, no_memo
from adr_review.prompts import Prompt, PromptFiles

Covers = Literal["yes", "no", "partly"]


class ClaimedFinding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    quote: str  # the finding's own quote of the ADR (verbatim, as a critic's would be)
    gap: str


class CoverCheckInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    adr: str  # library path of the ADR (prompts/_golden/adrs/...)
    passage: str  # what the Judge quoted as covering the finding
    finding: ClaimedFinding
    language: Literal["en", "ja"] | None = None  # what the reason is written in (None: the ADR's)


class CoverCheckExpect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    covers: Covers


class _OneCall:
    """The LLM port for one case: the check gets `answer` (None: capture the request and fail it)."""

    def __init__(self, answer: AnswerFn | None) -> None:
        self.answer = answer
        self.requests: list[LlmRequest] = []

    def complete(self, request: LlmRequest) -> LlmResponse:
        self.requests.append(request)
        if self.answer is None:
            raise LlmError("refused", "golden eval: request captured, not answered")
        return self.answer(request)


class CoverCheckSuite:
    prompt_name = COVER_CHECK_PROMPT
    reads: tuple[str, ...] = (f"{LIBRARY_DIR}/*",)

    def _run(self, case: GoldenCase, prompt: Prompt, llm: _OneCall) -> tuple[JudgeExclusions, CoverChecks]:
        inp = CoverCheckInput.model_validate(case.input)
        adr = load_library_adr(prompt, inp.adr)
        f = inp.finding
        finding = Finding(("premortem",), f.title, "medium", "add_to_risks", f.quote, "", f.gap, "", "")
        claims = judge_exclusions([("c-1", inp.passage)], {"c-1": finding}, adr)
        if not claims.unsure:
            held = "accepted" if claims.exclusions else f"rejected ({', '.join(claims.rejected)})"
            raise GoldenError(f"the claim does not reach the check: the code {held} it without one")
        ctx = NodeContext(llm=llm, memo=no_memo, prompts=PromptFiles(prompt.folder.parent), overrides={})
        checks = run_cover_checks(ctx, base_variables(adr, (), inp.language), claims.unsure)
        return settle_unsure(claims, checks.confirmed), checks

    def request(self, case: GoldenCase, prompt: Prompt) -> LlmRequest:
        llm = _OneCall(None)
        self._run(case, prompt, llm)
        if len(llm.requests) != 1:
            raise GoldenError(f"the check was asked {len(llm.requests)} times, not once")
        return llm.requests[0]

    def evaluate(self, case: GoldenCase, prompt: Prompt, answer: AnswerFn) -> Evaluation:
        expect = CoverCheckExpect.model_validate(case.expect)
        settled, checks = self._run(case, prompt, _OneCall(answer))
        if checks.errors:
            return step_failure(checks.errors[0].message, checks.usage)
        s = CaseScore()
        label = checks.labels[0] if checks.labels else None
        s.add("cases")
        s.add("verdict_correct", float(label == expect.covers))
        s.expect(label == expect.covers, f"covers {label!r}, expected {expect.covers!r}")
        kept = bool(settled.exclusions)
        s.add("exclusion_right", float(kept == (expect.covers == "yes")))
        s.expect(kept == (expect.covers == "yes"), f"exclusion {'kept' if kept else 'shown'}")
        s.details = {"covers": label, "exclusion_kept": kept}
        return Evaluation("ok", score=s, usage=checks.usage if checks.usage.calls else Usage())

    def metrics(self, scores: Sequence[CaseScore]) -> dict[str, float]:
        t = summed(scores)
        return {
            "verdict_accuracy": ratio(t.get("verdict_correct", 0.0), t.get("cases", 0.0)),
            "exclusion_decisions_right": ratio(t.get("exclusion_right", 0.0), t.get("cases", 0.0)),
        }

    def default_thresholds(self) -> Mapping[str, float]:
        return {"verdict_accuracy": 1.0, "exclusion_decisions_right": 1.0}
