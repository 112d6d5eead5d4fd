"""Run one prompt's golden cases: replay the recordings, or answer live (several samples; and record).

Replay feeds each case's recorded answer through the production stage (the suite runs run_recall /
run_blindspots with the model port answered from the recording: render -> call_prompt -> validation ->
the pipeline's own verification and guards), checks it against output_schema.json as well, and marks a
case whose recording no longer matches the request production would send, or the gate it is held to
(meta.yaml, the thresholds), as stale. A recording that does not answer the key it carries (one that
`--rekey-hand-written` moved: `Recording.verified`) answers a request nobody has answered: its case is
scored but reported as unverified, and the prompt fails.

Live takes `samples` answers per case (concurrently); each sample is scored on its own, the prompt's
metrics are the mean over the samples and `spread` their range and standard deviation, so one lucky
sample does not pass a prompt and a noisy one shows as noise.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal

from adr_review.core.llm_json import NotJsonError, parse_json_answer, schema_errors
from adr_review.core.results import Usage
from adr_review.evals.golden.cases import (
    SOURCE_FAKE_SERVER,
    SOURCE_PROXY,
    GoldenCase,
    GoldenError,
    RecordedRequest,
    RecordedUsage,
    Recording,
    answer_source,
    gate_of,
    golden_dir,
    load_cases,
    load_recording,
    recording_key,
    save_recording,
)
from adr_review.evals.golden.scoring import (
    COMMON_THRESHOLDS,
    CaseResult,
    CaseScore,
    Check,
    Evaluation,
    Suite,
    check_thresholds,
    ratio,
)
from adr_review.pipeline.ports import LlmError, LlmPort, LlmRequest, LlmResponse
from adr_review.prompts import Prompt, PromptError, load_prompt

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
    samples: int = 1  # answers per case (live); the metrics are their mean
    spread: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # metric -> (min, max, sd)

    @property
    def stale(self) -> list[CaseResult]:
        return [c for c in self.cases if c.status in ("stale", "missing", "unreadable")]

    @property
    def rekeyed(self) -> list[CaseResult]:
        """Cases replayed from a re-keyed hand-written answer: nobody answered their request."""
        return [c for c in self.cases if c.rekeyed]

    @property
    def passed(self) -> bool:
        return not self.errors and not self.stale and not self.rekeyed and all(c.ok for c in self.checks)

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
    """Where the answers come from: the recordings (replay) or `llm` (live) at `base_url`, the URL its
    client sends requests to, which alone decides what its answers are called (`answer_source`)."""

    mode: Mode
    llm: LlmPort | None = None
    record: bool = False
    base_url: str | None = None
    samples: int = 1  # live: answers per case

    @property
    def source(self) -> str:
        return answer_source(self.base_url) if self.base_url else SOURCE_PROXY


def run_prompt(name: str, suite: Suite | None, prompts_dir: Path, answering: Answering) -> PromptReport:
    report = PromptReport(name=name, mode=answering.mode, samples=_samples(answering))
    try:
        prompt = load_prompt(name, prompts_dir)
    except PromptError as exc:
        report.errors.append(str(exc))
        return report
    if suite is None:
        report.errors.append(
            f"no eval suite knows prompt {name!r} (add one in app/adr_review/evals/golden/suites.py)"
        )
        return report
    folder = golden_dir(prompt)
    cases, errors = load_cases(folder)
    report.errors.extend(errors)
    if not cases:
        report.errors.append(f"no golden cases in {folder}")
    thresholds = prompt_thresholds(suite, prompt)
    gate = gate_of(prompt, thresholds)
    for case in cases:
        result, recorded = _run_case(case, prompt, suite, folder, answering, gate)
        report.cases.append(result)
        if recorded:
            report.recorded.append(case.id)
    report.metrics, report.spread = _sampled_metrics(report.cases, suite, report.samples)
    report.checks = check_thresholds(report.metrics, thresholds)
    return report


def prompt_thresholds(suite: Suite, prompt: Prompt) -> dict[str, float]:
    """The gates a prompt is held to: the common ones, its suite's defaults, its meta.yaml's."""
    return {**COMMON_THRESHOLDS, **suite.default_thresholds(), **eval_thresholds(prompt)}


def case_key(case: GoldenCase, prompt: Prompt, suite: Suite) -> str:
    """The key a recording of `case` must carry now (the request and the gate)."""
    return recording_key(suite.request(case, prompt), gate_of(prompt, prompt_thresholds(suite, prompt)))


def eval_thresholds(prompt: Prompt) -> dict[str, float]:
    """`eval: {thresholds: {...}}` in meta.yaml (the top-level `thresholds` is the prompt's own business)."""
    section = prompt.meta.raw.get("eval") or {}
    raw = section.get("thresholds") if isinstance(section, Mapping) else None
    return {str(k): float(v) for k, v in (raw or {}).items()}


def _run_case(
    case: GoldenCase,
    prompt: Prompt,
    suite: Suite,
    folder: Path,
    answering: Answering,
    gate: Mapping[str, Any],
) -> tuple[CaseResult, bool]:
    """The case's result, and whether its answer was recorded."""
    try:
        request = suite.request(case, prompt)
    except Exception as exc:  # a case the production renderer cannot take is the case's bug
        return CaseResult(case.id, "input_error", message=f"{type(exc).__name__}: {exc}"), False
    key = recording_key(request, gate)
    if answering.mode == "replay":
        try:
            recording = load_recording(folder, case.id)
        except GoldenError as exc:
            return CaseResult(case.id, "unreadable", message=str(exc)), False
        if recording is None:
            return CaseResult(case.id, "missing", message="no recording"), False
        if recording.key != key:
            message = f"recorded for {recording.key[:19]}…, the prompt now renders {key[:19]}…"
            if recording.gate is not None and recording.key == recording_key(request, recording.gate):
                message += " (the request is the same: the gate changed, meta.yaml or a threshold)"
            return CaseResult(case.id, "stale", message=message, source=recording.source), False
        answerer = _Answerer(gate, replay=recording)
        result = _scored(case, prompt, suite, answerer, recording.source)
        result.rekeyed = not recording.verified
        return result, False
    assert answering.llm is not None, "live mode needs an LLM"
    live = answering.llm
    answerers = [_Answerer(gate, live=live) for _ in range(_samples(answering))]
    with ThreadPoolExecutor(max_workers=min(len(answerers), 4), thread_name_prefix="golden-sample") as pool:
        samples = list(pool.map(lambda a: _scored(case, prompt, suite, a, answering.source), answerers))
    result = samples[0]
    result.samples = samples
    first = answerers[0]
    if answering.record and first.response is not None and first.request is not None:
        save_recording(folder, _recording(case, prompt, first.request, first.response, answering, gate))
        return result, True
    return result, False


def _samples(answering: Answering) -> int:
    return max(1, answering.samples) if answering.mode == "live" else 1


def _scored(case: GoldenCase, prompt: Prompt, suite: Suite, answerer: _Answerer, source: str) -> CaseResult:
    """One answer through the production stage, scored, then held to the strict output schema."""
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
        source=source,
    )
    if answerer.response is None and result.status == "ok":
        result.status, result.message = "input_error", "the step under test was never called"
    if result.status == "ok":
        problems = _strict_schema_problems(answerer.response, prompt)
        if problems:  # the pipeline repaired or tolerated it; the contract the model was given did not
            result.status = "schema"
            result.message = "violates output_schema.json (the pipeline tolerated it): " + "; ".join(problems)
    return result


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

    def __init__(
        self, gate: Mapping[str, Any], replay: Recording | None = None, live: LlmPort | None = None
    ) -> None:
        self.gate = gate
        self.recording = replay
        self.live = live
        self.request: LlmRequest | None = None
        self.response: LlmResponse | None = None

    def __call__(self, request: LlmRequest) -> LlmResponse:
        self.request = request
        if self.recording is not None:
            if recording_key(request, self.gate) != self.recording.key:
                raise LlmError("refused", "replay: the request differs from the one recorded")
            self.response = self.recording.response()
        else:
            assert self.live is not None
            self.response = self.live.complete(request)
        return self.response


def _recording(
    case: GoldenCase,
    prompt: Prompt,
    request: LlmRequest,
    response: LlmResponse,
    answering: Answering,
    gate: Mapping[str, Any],
) -> Recording:
    u = response.usage
    key = recording_key(request, gate)
    return Recording(
        case=case.id,
        prompt=prompt.name,
        key=key,
        answered_key=key,  # answered, not moved: verified
        gate=dict(gate),
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
        request=recorded_request(request, prompt),
        base_url=answering.base_url,
        note=_SOURCE_NOTES.get(answering.source),
        text=response.text,
        data=response.data,
    )


_SOURCE_NOTES = {
    SOURCE_FAKE_SERVER: "Answer of a server on a loopback address (the tests' fake Messages API, "
    "tests/fakes/messages_server.py), not of the provider's API: not of a model as far as anything shows.",
    SOURCE_PROXY: "Answer through a base URL that is not the provider's own API host (a proxy or "
    "gateway): nothing shows it is a model's, not of a model as far as anything shows.",
}


def recorded_request(request: LlmRequest, prompt: Prompt) -> RecordedRequest:
    return RecordedRequest(
        model=request.model,
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        prompt_files_hash=prompt.files_hash(),
    )


def _sampled_metrics(
    cases: Sequence[CaseResult], suite: Suite, samples: int
) -> tuple[dict[str, float], dict[str, tuple[float, float, float]]]:
    """The metrics, and with several samples their mean with each metric's (min, max, sd) over them."""
    if samples <= 1:
        return _metrics(cases, suite), {}
    runs = [
        _metrics([c.samples[i] if len(c.samples) > i else c for c in cases], suite) for i in range(samples)
    ]
    names = [m for m in runs[0] if all(m in r for r in runs)]
    mean = {m: statistics.mean(r[m] for r in runs) for m in names}
    spread = {
        m: (min(r[m] for r in runs), max(r[m] for r in runs), statistics.pstdev(r[m] for r in runs))
        for m in names
    }
    # Usage is paid once per sample: report the total, not the mean.
    for m in ("input_tokens", "output_tokens", "cost_usd"):
        if m in mean:
            mean[m] = round(sum(r[m] for r in runs), 4)
    return mean, spread


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
