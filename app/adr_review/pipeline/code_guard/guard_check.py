"""The guard's model check: one call per implicated ADR (at most 3), its answer verified in the core.

    check = check_decisions([(adr, matched_lines), ...], query, llm, prompts)

For each ADR the offline guard implicated, the prompt `guard-check` is given the ADR's Decision and
Consequences (clipped, app/adr_review/core/guard_check.py) and the change's added and removed lines
(the ones that matched the ADR first, budgeted), and answers `{verdict, adr_quote, diff_quote, reason,
confidence}`; app/adr_review/core/guard_check.py checks the quotes. A model's own failure for one ADR
(cut off, not JSON, schema-invalid, a refused or timed-out call) leaves that ADR as the offline guard
listed it, with a note that says why; an infrastructure error (InfrastructureError, RunAbandoned) is
not caught here and fails the run, as everywhere. What the calls cost is summed in `usage`, so the
caller's caps see it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from adr_review.core.adr import Adr
from adr_review.core.guard import MAX_SHOWN, Evidence, GuardQuery
from adr_review.core.guard_check import (
    ADR_SECTION_BUDGET,
    DIFF_BUDGET,
    GuardVerdict,
    arrange,
    clip,
    diff_excerpt,
    verify_answer,
)
from adr_review.core.prompt_text import our_tags
from adr_review.core.results import Usage
from adr_review.core.text import fold_whitespace
from adr_review.pipeline.ports import LlmPort, LlmRequest, PromptLibrary, StageMemo, no_memo
from adr_review.pipeline.structured import StepFailed, StepOverrides, build_request, call_prompt, request_key
from adr_review.prompts import Prompt, PromptError

log = logging.getLogger(__name__)

PROMPT_NAME = "guard-check"
STAGE = "guard_check"
_LANGUAGE_NAMES = {"en": "English", "ja": "Japanese"}
# The prompt's own delimiters: ADR or diff text cannot close them and pose as instructions.
_OUR_TAGS = our_tags("adr_decision", "code_change")


@dataclass(frozen=True)
class CheckFailure:
    path: str  # the ADR whose check gave no usable answer
    kind: str  # truncated | not_json | schema | llm_error | prompt
    message: str


@dataclass(frozen=True)
class GuardCheckResult:
    shown: tuple[GuardVerdict, ...]  # verified answers, conflicts first, at most 3
    unverified: tuple[GuardVerdict, ...]  # answers whose quotes did not verify: listed apart
    failures: tuple[CheckFailure, ...]  # ADRs left as the offline guard listed them, and why
    usage: Usage
    model: str = ""
    replayed: int = 0  # answers taken from the stage memo (no call paid)

    def verdict_for(self, path: str) -> GuardVerdict | None:
        return next((v for v in self.shown if v.path == path), None)


def _clean(text: str) -> str:
    return _OUR_TAGS.sub("[tag removed]", text)


@dataclass(frozen=True)
class Budgets:
    """The caps of meta.yaml `thresholds` (part of the golden key), the code's defaults otherwise."""

    max_checks: int = MAX_SHOWN
    diff: int = DIFF_BUDGET
    adr_section: int = ADR_SECTION_BUDGET

    @classmethod
    def of(cls, thresholds: Mapping[str, float]) -> Budgets:
        d = cls()
        return cls(
            int(thresholds.get("max_checks", d.max_checks)),
            int(thresholds.get("diff_budget", d.diff)),
            int(thresholds.get("adr_section_budget", d.adr_section)),
        )


def prompt_variables(
    adr: Adr, matched: Sequence[Evidence], query: GuardQuery, title: str, budgets: Budgets = Budgets()
) -> dict[str, Any]:
    """What the prompt is given for one ADR: its Decision and Consequences, clipped, and the change."""
    diff, _cut = diff_excerpt(query.lines, matched, budgets.diff)

    def section(name: str) -> str:
        return _clean(clip((adr.sections.get(name) or "").strip(), budgets.adr_section))

    return {
        "language_name": _LANGUAGE_NAMES.get(adr.language, adr.language),
        "adr": {
            "adr_id": _clean(adr.adr_id),
            "title": _clean(fold_whitespace(adr.title)),
            "status": adr.status,
            "decision": section("decision"),
            "consequences": section("consequences"),
        },
        "change": {"title": _clean(fold_whitespace(title))[:300], "diff": _clean(diff)},
    }


def check_decisions(
    decisions: Sequence[tuple[Adr, Sequence[Evidence]]],
    query: GuardQuery,
    llm: LlmPort,
    prompts: PromptLibrary,
    *,
    title: str = "",
    overrides: StepOverrides | None = None,
    memo: StageMemo = no_memo,
) -> GuardCheckResult:
    """One check per (ADR, its matched lines), in order, at most meta.yaml's `max_checks`; the
    answers verified and arranged."""
    try:
        prompt = prompts.prompt(PROMPT_NAME)
    except PromptError as exc:
        return GuardCheckResult(
            (), (), tuple(CheckFailure(a.path, "prompt", str(exc)) for a, _ in decisions), Usage()
        )
    verdicts: list[GuardVerdict] = []
    failures: list[CheckFailure] = []
    usage = Usage()
    replayed = 0
    budgets = Budgets.of(prompt.meta.thresholds)
    request = None
    for adr, matched in decisions[: budgets.max_checks]:
        request = build_request(prompt, prompt_variables(adr, matched, query, title, budgets), overrides)
        step = _Step(llm, prompt, request)
        try:
            stored = memo(f"{STAGE}:{adr.path}", step, request_key(request))
        except StepFailed as exc:
            usage = usage + exc.usage
            log.warning("guard_check_failed", extra={"adr": adr.path, "kind": exc.kind, "error": exc.message})
            failures.append(CheckFailure(adr.path, exc.kind, exc.message[:300]))
            continue
        replayed += 0 if step.called else 1
        usage = usage + Usage.stored(stored.get("usage"))
        verdicts.append(verify_answer(adr, stored["answer"], query.lines))
    shown, unverified = arrange(verdicts)
    log.info(
        "guard_check_done",
        extra={"checked": len(verdicts) + len(failures), "shown": len(shown),
               "unverified": len(unverified), "failed": len(failures)},
    )  # fmt: skip
    model = request.model if request is not None else ""
    return GuardCheckResult(shown, unverified, tuple(failures), usage, model, replayed)


class _Step:
    """The memo's compute for one ADR: the call, its answer validated against the schema."""

    def __init__(self, llm: LlmPort, prompt: Prompt, request: LlmRequest) -> None:
        self.llm, self.prompt, self.request = llm, prompt, request
        self.called = False

    def __call__(self) -> dict[str, Any]:
        self.called = True
        answer = call_prompt(self.llm, self.prompt, {}, request=self.request)
        paid = answer.usage if answer.usage.model else replace(answer.usage, model=answer.request.model)
        return {"answer": answer.data, "usage": asdict(paid), "model": answer.request.model}
