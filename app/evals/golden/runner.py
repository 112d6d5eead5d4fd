"""Run one prompt's golden cases: replay the recordings, or answer live (and record), or re-key.

Replay feeds each case's recorded answer through the production stage (the suite runs run_recall /
run_blindspots with the model port answered from the recording: render -> call_prompt -> validation ->
the pipeline's own verification and guards), checks it against output_schema.json as well, and marks a
case whose recording no longer matches the request production would send as stale.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Literal

from app.core.llm_json import NotJsonError, parse_json_answer, schema_errors
from app.core.results import Usage
from app.evals.golden.cases import (
    SOURCE_FAKE_SERVER,
    SOURCE_HAND_WRITTEN,
    SOURCE_LIVE,
    GoldenCase,
    GoldenError,
    RecordedRequest,
    RecordedUsage,
    Recording,
    estimate_tokens,
    golden_dir,
    load_cases,
    load_recording,
    request_chars,
    request_key,
    save_recording,
)
from app.evals.golden.scoring import (
    COMMON_THRESHOLDS,
    CaseResult,
    CaseScore,
    Check,
    Evaluation,
    Suite,
    check_thresholds,
    ratio,
)
from app.pipeline.ports import LlmError, LlmPort, LlmRequest, LlmResponse
from app.prompts import Prompt, PromptError, load_prompt

Mode = Literal["replay", "live"]


@dataclass
class PromptReport:
    name: str
    mode: Mode
    cases: list[CaseResult] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)

    @property
    def stale(self) -> list[CaseResult]:
        return [c for c in self.cases if c.status in ("stale", "missing", "unreadable")]

    @property
    def passed(self) -> bool:
        return not self.errors and not self.stale and all(c.ok for c in self.checks)

    @property
    def sources(self) -> dict[str, int]:
        return dict(Counter(c.source or "(none)" for c in self.cases))

    @property
    def usage_estimated(self) -> bool:
        return any(c.usage_estimated for c in self.cases)


@dataclass
class EvalReport:
    mode: Mode
    prompts: list[PromptReport]
    selected_by: str | None = None  # "--changed-since REF" when filtered
    skipped: list[str] = field(default_factory=list)  # prompts not selected

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.prompts)


def discover_prompts(prompts_dir: Path) -> list[str]:
    """Every prompt folder: one without golden cases is reported as failing, never skipped."""
    return sorted(p.parent.name for p in prompts_dir.glob("*/prompt.md"))


@dataclass(frozen=True)
class Answering:
    """Where the answers come from: the recordings (replay) or `llm` (live), and what to call them."""

    mode: Mode
    llm: LlmPort | None = None
    record: bool = False
    source: str = SOURCE_LIVE
    base_url: str | None = None


def run_prompt(name: str, suite: Suite | None, prompts_dir: Path, answering: Answering) -> PromptReport:
    report = PromptReport(name=name, mode=answering.mode)
    try:
        prompt = load_prompt(name, prompts_dir)
    except PromptError as exc:
        report.errors.append(str(exc))
        return report
    if suite is None:
        report.errors.append(f"no eval suite knows prompt {name!r} (add one in app/evals/golden/suites.py)")
        return report
    folder = golden_dir(prompt)
    cases, errors = load_cases(folder)
    report.errors.extend(errors)
    if not cases:
        report.errors.append(f"no golden cases in {folder}")
    for case in cases:
        result, recorded = _run_case(case, prompt, suite, folder, answering)
        report.cases.append(result)
        if recorded:
            report.recorded.append(case.id)
    report.metrics = _metrics(report.cases, suite)
    thresholds = {**COMMON_THRESHOLDS, **suite.default_thresholds(), **eval_thresholds(prompt)}
    report.checks = check_thresholds(report.metrics, thresholds)
    return report


def eval_thresholds(prompt: Prompt) -> dict[str, float]:
    """`eval: {thresholds: {...}}` in meta.yaml (the top-level `thresholds` is the prompt's own business)."""
    section = prompt.meta.raw.get("eval") or {}
    raw = section.get("thresholds") if isinstance(section, Mapping) else None
    return {str(k): float(v) for k, v in (raw or {}).items()}


def _run_case(
    case: GoldenCase, prompt: Prompt, suite: Suite, folder: Path, answering: Answering
) -> tuple[CaseResult, bool]:
    """The case's result, and whether its answer was recorded."""
    try:
        request = suite.request(case, prompt)
    except Exception as exc:  # a case the production renderer cannot take is the case's bug
        return CaseResult(case.id, "input_error", message=f"{type(exc).__name__}: {exc}"), False
    key = request_key(request)
    if answering.mode == "replay":
        try:
            recording = load_recording(folder, case.id)
        except GoldenError as exc:
            return CaseResult(case.id, "unreadable", message=str(exc)), False
        if recording is None:
            return CaseResult(case.id, "missing", message="no recording"), False
        if recording.key != key:
            message = f"recorded for {recording.key[:19]}…, the prompt now renders {key[:19]}…"
            return CaseResult(case.id, "stale", message=message, source=recording.source), False
        answerer = _Answerer(replay=recording)
        answer_source = recording.source
    else:
        assert answering.llm is not None, "live mode needs an LLM"
        answerer = _Answerer(live=answering.llm)
        answer_source = answering.source
    try:
        evaluation = suite.evaluate(case, prompt, answerer)
    except Exception as exc:  # production code choking on an answer is a finding, not a crash of the gate
        evaluation = Evaluation("input_error", message=f"{type(exc).__name__}: {exc}")
    result = CaseResult(
        case.id,
        evaluation.status,
        score=evaluation.score,
        message=evaluation.message,
        usage=evaluation.usage,
        usage_estimated=answerer.recording is not None and answerer.recording.usage.estimated,
        source=answer_source,
    )
    if answerer.response is None and result.status == "ok":
        result.status, result.message = "input_error", "the step under test was never called"
    if result.status == "ok":
        problems = _strict_schema_problems(answerer.response, prompt)
        if problems:  # the pipeline repaired or tolerated it; the contract the model was given did not
            result.status = "schema"
            result.message = "violates output_schema.json (the pipeline tolerated it): " + "; ".join(problems)
    if (
        answering.mode == "live"
        and answering.record
        and answerer.response is not None
        and answerer.request is not None
    ):
        recording = _recording(case, prompt, answerer.request, answerer.response, answering)
        save_recording(folder, recording)
        return result, True
    return result, False


def _strict_schema_problems(response: LlmResponse | None, prompt: Prompt) -> list[str]:
    if response is None:
        return []
    data = response.data
    if data is None:
        try:
            data = parse_json_answer(response.text)
        except NotJsonError as exc:
            return [str(exc)]
    return schema_errors(data, prompt.schema)


class _Answerer:
    """Stands in for the model: a recording (refusing any other request) or the live adapter."""

    def __init__(self, replay: Recording | None = None, live: LlmPort | None = None) -> None:
        self.recording = replay
        self.live = live
        self.request: LlmRequest | None = None
        self.response: LlmResponse | None = None

    def __call__(self, request: LlmRequest) -> LlmResponse:
        self.request = request
        if self.recording is not None:
            if request_key(request) != self.recording.key:
                raise LlmError("refused", "replay: the request differs from the one recorded")
            self.response = self.recording.response()
        else:
            assert self.live is not None
            self.response = self.live.complete(request)
        return self.response


def _recording(
    case: GoldenCase, prompt: Prompt, request: LlmRequest, response: LlmResponse, answering: Answering
) -> Recording:
    u = response.usage
    return Recording(
        case=case.id,
        prompt=prompt.name,
        key=request_key(request),
        source=answering.source,
        model=u.model or request.model,
        date=date.today().isoformat(),
        usage=RecordedUsage(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_tokens,
            cache_write_tokens=u.cache_write_tokens,
            cost_usd=round(u.cost_usd, 6),
        ),
        request=_recorded_request(request, prompt),
        base_url=answering.base_url,
        note=(
            "Answer of the local fake Messages API server (tests/fakes/messages_server.py), not of a model."
            if answering.source == SOURCE_FAKE_SERVER
            else None
        ),
        text=response.text,
        data=response.data,
    )


def _recorded_request(request: LlmRequest, prompt: Prompt) -> RecordedRequest:
    return RecordedRequest(
        model=request.model,
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        prompt_files_hash=prompt.files_hash(),
    )


def _metrics(cases: Sequence[CaseResult], suite: Suite) -> dict[str, float]:
    answered = [c for c in cases if c.answered]
    valid = [c for c in answered if c.status == "ok"]
    usage = Usage()
    for c in cases:
        usage = usage + c.usage
    metrics: dict[str, float] = {
        "cases": float(len(cases)),
        "schema_valid_rate": ratio(len(valid), len(answered), empty=0.0),
        "case_pass_rate": ratio(sum(c.passed for c in answered), len(answered), empty=0.0),
    }
    scores: list[CaseScore] = [c.score for c in valid if c.score is not None]
    metrics.update(suite.metrics(scores))
    metrics.update(
        {
            "input_tokens": float(usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens),
            "output_tokens": float(usage.output_tokens),
            "cost_usd": round(usage.cost_usd, 4),
        }
    )
    return metrics


# --- re-keying hand-written answers --------------------------------------------------------------


class PriceFn:
    """USD for a call, from the adapter's price table (repo config `llm.prices`)."""

    def __init__(self) -> None:
        from app.config import LlmSettings

        self.settings = LlmSettings()

    def __call__(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.settings.price_for(model)
        if price is None:
            return 0.0
        return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


def rekey_hand_written(
    name: str, suite: Suite | None, prompts_dir: Path, price: PriceFn | None = None
) -> list[str]:
    """Re-key the hand-written recordings of one prompt to what it renders now. Returns messages.

    Only answers labelled hand-written are touched: a model's recorded answer to an old prompt is not
    an answer to the new one, so those must be re-recorded live.
    """
    prompt = load_prompt(name, prompts_dir)
    if suite is None:
        return [f"{name}: no eval suite"]
    folder = golden_dir(prompt)
    cases, errors = load_cases(folder)
    messages = list(errors)
    for case in cases:
        try:
            request = suite.request(case, prompt)
            recording = load_recording(folder, case.id)
        except Exception as exc:
            messages.append(f"{name}/{case.id}: {type(exc).__name__}: {exc}")
            continue
        if recording is None:
            messages.append(
                f"{name}/{case.id}: no recording to re-key (write {case.id}.recording.json first)"
            )
            continue
        if recording.source != SOURCE_HAND_WRITTEN:
            messages.append(
                f"{name}/{case.id}: recorded from {recording.source!r}, not hand-written: re-record it with --live --record"
            )
            continue
        key = request_key(request)
        if recording.key == key:
            continue
        output = recording.text or json.dumps(recording.data, ensure_ascii=False)
        in_tokens, out_tokens = estimate_tokens(request_chars(request)), estimate_tokens(len(output))
        updated = recording.model_copy(
            update={
                "key": key,
                "model": request.model,
                "date": date.today().isoformat(),
                "request": _recorded_request(request, prompt),
                "usage": RecordedUsage(
                    input_tokens=in_tokens,
                    output_tokens=out_tokens,
                    cost_usd=round(price(request.model, in_tokens, out_tokens), 6) if price else 0.0,
                    estimated=True,
                ),
            }
        )
        save_recording(folder, updated)
        messages.append(f"{name}/{case.id}: re-keyed hand-written answer")
    return messages
