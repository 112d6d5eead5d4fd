"""The guard-check suite: a case's ADR and code change through the production guard check.

The case names one library ADR and carries its change inline (a hand-written unified diff): the
production parser and query builder read the diff (app/adr_review/core/diff.py, core/guard.py), the lines
that match the ADR are picked as the guard picks them (`matching_lines`), and
app/adr_review/pipeline/guard_check.check_decisions renders the prompt, validates the answer and
verifies its quotes (app/adr_review/core/guard_check.py). The suite only counts what it keeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from adr_review.core.diff import parse_diff
from adr_review.core.guard import build_query, matching_lines
from adr_review.evals.golden.cases import LIBRARY_DIR, GoldenCase, GoldenError, load_library_adr
from adr_review.evals.golden.scoring import (
    AnswerFn,
    CaseScore,
    Evaluation,
    StepLlm,
    ratio,
    step_failure,
    summed,
)
from adr_review.pipeline.code_guard.guard_check import PROMPT_NAME, GuardCheckResult, check_decisions
from adr_review.pipeline.ports import LlmRequest
from adr_review.prompts import Prompt, PromptFiles


class GuardInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    adr: str  # library path of the implicated ADR
    diff: str  # the code change, a unified diff (hand-written for the case)
    title: str = ""  # the pull request's title


class GuardExpect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: Literal["conflicts", "consistent", "unclear"]  # what a good answer says, its quotes verified


class GuardCheckSuite:
    """guard-check, run through the production check (app/adr_review/pipeline/code_guard/guard_check.py)."""

    prompt_name = PROMPT_NAME
    reads: tuple[str, ...] = (f"{LIBRARY_DIR}/*",)

    def _run(self, case: GoldenCase, prompt: Prompt, llm: StepLlm) -> GuardCheckResult:
        inp = GuardInput.model_validate(case.input)
        adr = load_library_adr(prompt, inp.adr)
        query = build_query(parse_diff(inp.diff), inp.title)
        if not query.lines:
            raise GoldenError(f"case {case.id}: the diff has no added or removed line")
        pairs = [(adr, matching_lines(adr, query.lines))]
        return check_decisions(pairs, query, llm, PromptFiles(prompt.folder.parent), title=inp.title)

    def request(self, case: GoldenCase, prompt: Prompt) -> LlmRequest:
        llm = StepLlm(self.prompt_name, None)
        result = self._run(case, prompt, llm)
        if len(llm.requests) != 1:
            why = "; ".join(f.message for f in result.failures) or "no call"
            raise GoldenError(f"the guard check did not reach the model ({why})")
        return llm.requests[0]

    def evaluate(self, case: GoldenCase, prompt: Prompt, answer: AnswerFn) -> Evaluation:
        expect = GuardExpect.model_validate(case.expect)
        llm = StepLlm(self.prompt_name, answer)
        result = self._run(case, prompt, llm)
        if result.failures:
            f = result.failures[0]
            return step_failure(f"{f.kind}: {f.message}", result.usage)
        return Evaluation("ok", score=self.score(result, expect), usage=result.usage)

    def score(self, result: GuardCheckResult, expect: GuardExpect) -> CaseScore:
        s = CaseScore()
        answers = [*result.shown, *result.unverified]
        s.add("answers", len(answers))
        s.add("unverified_answers", len(result.unverified))
        s.add("conflicts_shown", sum(1 for v in result.shown if v.shown_as_conflict))
        got = result.shown[0].verdict if result.shown else None
        s.add("verdict_match", float(got == expect.verdict))
        s.expect(got == expect.verdict, f"verdict {got or 'none verified'}, expected {expect.verdict}")
        false_conflict = expect.verdict != "conflicts" and any(v.shown_as_conflict for v in result.shown)
        s.add("false_conflicts", float(false_conflict))
        for v in result.unverified:
            s.failures.append(f"unverified answer ({v.unverified}): {v.claimed_adr_quote[:80]!r}")
        s.details = {
            "answers": [
                {"verdict": v.verdict, "unverified": v.unverified, "adr_quote": v.adr_quote or v.claimed_adr_quote,
                 "diff_quote": v.diff_quote or v.claimed_diff_quote, "section": v.section}
                for v in answers
            ],
        }  # fmt: skip
        return s

    def metrics(self, scores: Sequence[CaseScore]) -> dict[str, float]:
        t = summed(scores)
        return {
            "verdict_match_rate": ratio(t.get("verdict_match", 0.0), float(len(scores))),
            "unverified_answers": t.get("unverified_answers", 0.0),
            "false_conflicts": t.get("false_conflicts", 0.0),
            "conflicts_shown": t.get("conflicts_shown", 0.0),
        }

    def default_thresholds(self) -> Mapping[str, float]:
        return {"verdict_match_rate": 1.0, "max_unverified_answers": 0, "max_false_conflicts": 0}
