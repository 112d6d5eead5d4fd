"""What one answer earns, how a prompt is scored (the Suite protocol), and the thresholds that gate it.

Scoring reuses the production code: citations are verified by the recall pipeline's verification and
findings go through the blind-spot guards (app/adr_review/core/findings.py); the suites only count.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from adr_review.core.results import Usage
from adr_review.core.text import contains_verbatim, normalize
from adr_review.evals.golden.cases import GoldenCase
from adr_review.pipeline.ports import LlmError, LlmRequest, LlmResponse
from adr_review.prompts import Prompt


@dataclass
class CaseScore:
    """What one answer earned: additive counts (summed over cases) and the expectations it missed."""

    counts: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def add(self, name: str, value: float = 1.0) -> None:
        self.counts[name] = self.counts.get(name, 0.0) + value

    def expect(self, ok: bool, message: str) -> None:
        if not ok:
            self.failures.append(message)


CaseStatus = Literal["ok", "stale", "missing", "unreadable", "llm_error", "not_json", "schema", "input_error"]


@dataclass
class CaseResult:
    case_id: str
    status: CaseStatus
    score: CaseScore | None = None
    message: str = ""
    usage: Usage = field(default_factory=Usage)
    usage_estimated: bool = False
    source: str | None = None  # where the scored answer came from
    rekeyed: bool = False  # replayed from a recording that --rekey-hand-written moved: unverified
    samples: list[CaseResult] = field(default_factory=list)  # live: every sample (this one is the first)

    @property
    def answered(self) -> bool:
        """The case produced an answer to score (valid or not) rather than a recording problem."""
        return self.status in ("ok", "not_json", "schema", "llm_error")

    @property
    def passed(self) -> bool:
        return self.status == "ok" and self.score is not None and not self.score.failures


AnswerFn = Callable[[LlmRequest], LlmResponse]


@dataclass
class Evaluation:
    """The production path's verdict on one answer: a score, or why the step gave no valid answer."""

    status: CaseStatus
    score: CaseScore | None = None
    message: str = ""
    usage: Usage = field(default_factory=Usage)


def step_failure(message: str, usage: Usage) -> Evaluation:
    """A stage error "<kind>: <message>" as an Evaluation: not_json and schema by name, else llm_error."""
    kind, _, detail = message.partition(": ")
    if kind == "not_json":
        return Evaluation("not_json", message=detail, usage=usage)
    if kind == "schema":
        return Evaluation("schema", message=detail, usage=usage)
    return Evaluation("llm_error", message=message, usage=usage)


class StepLlm:
    """The LLM port for a single-step run: `answer` stands in for the model (None: capture and fail)."""

    def __init__(self, target: str, answer: AnswerFn | None) -> None:
        self.target = target
        self.answer = answer
        self.requests: list[LlmRequest] = []
        self.response: LlmResponse | None = None

    def complete(self, request: LlmRequest) -> LlmResponse:
        if request.prompt_name != self.target:
            raise LlmError("refused", "golden eval: this step is not part of the case")
        self.requests.append(request)
        if self.answer is None:
            raise LlmError("refused", "golden eval: request captured, not answered")
        self.response = self.answer(request)
        return self.response


class Suite(Protocol):
    """How one kind of prompt is fed from a case and scored. One instance per prompt name."""

    # Files under prompts/ that the cases read besides the prompt's own folder (fnmatch patterns):
    # a change to one of them selects the prompt for `--changed-since`.
    reads: tuple[str, ...]

    def request(self, case: GoldenCase, prompt: Prompt) -> LlmRequest:
        """The exact request production sends for this case's input (rendered by production code)."""
        ...

    def evaluate(self, case: GoldenCase, prompt: Prompt, answer: AnswerFn) -> Evaluation:
        """Run the production step with `answer` standing in for the model, and score what it keeps."""
        ...

    def metrics(self, scores: Sequence[CaseScore]) -> dict[str, float]:
        """The prompt-level metrics, from the answered cases' scores."""
        ...

    def default_thresholds(self) -> Mapping[str, float]: ...


def ratio(num: float, den: float, empty: float = 1.0) -> float:
    """num/den, or `empty` when there was nothing to count (no expectation means nothing missed)."""
    return empty if den == 0 else num / den


def summed(scores: Sequence[CaseScore]) -> dict[str, float]:
    total: dict[str, float] = {}
    for s in scores:
        for k, v in s.counts.items():
            total[k] = total.get(k, 0.0) + v
    return total


# --- expectations shared by the suites -------------------------------------------------------------------


# Quoted text inside a finding's own words ("the ADR says 「…」"): a phrase found only there was copied
# from the ADR, not said by the model, so it never counts.
_QUOTED = re.compile(r"「[^」]*」|『[^』]*』|“[^”]*”|\"[^\"\n]*\"|`[^`\n]*`|«[^»]*»|^\s*>.*$", re.MULTILINE)


def unquoted(text: str) -> str:
    """`text` with every quoted span blanked out."""
    return _QUOTED.sub(" ", text)


class Phrase(BaseModel):
    """A finding the case expects (or forbids): any key phrase in what the model itself wrote (never in
    its `quote` of the ADR, nor in text it quotes inside its own words), or one of its dedupe groups."""

    model_config = ConfigDict(extra="forbid")
    label: str
    any_of: list[str] = Field(default_factory=list)
    dedupe_group: list[str] = Field(default_factory=list)

    def matches(self, finding: Any, fields: Sequence[str]) -> bool:
        group = getattr(finding, "dedupe_group", "")
        if group and normalize(group) in {normalize(g) for g in self.dedupe_group}:
            return True
        text = "\n".join(unquoted(str(getattr(finding, f, "") or "")) for f in fields).casefold()
        return any(contains_verbatim(text, p.casefold()) for p in self.any_of)


class Bounds(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min: int | None = None
    max: int | None = None

    def holds(self, n: int) -> bool:
        return (self.min is None or n >= self.min) and (self.max is None or n <= self.max)

    def describe(self) -> str:
        lo = "" if self.min is None else str(self.min)
        hi = "" if self.max is None else str(self.max)
        return f"[{lo}..{hi}]"


# --- thresholds -----------------------------------------------------------------------------------

COMMON_THRESHOLDS: Mapping[str, float] = {"schema_valid_rate": 1.0}


@dataclass(frozen=True)
class Check:
    metric: str
    bound: Literal["min", "max"]
    limit: float
    value: float | None  # None: the metric does not exist for this prompt

    @property
    def ok(self) -> bool:
        if self.value is None:
            return False
        return self.value >= self.limit if self.bound == "min" else self.value <= self.limit

    def describe(self) -> str:
        op = ">=" if self.bound == "min" else "<="
        return f"{op} {_fmt(self.limit)}"


def parse_threshold(key: str) -> tuple[str, Literal["min", "max"]]:
    """`max_<metric>` is an upper bound, `min_<metric>` or a bare `<metric>` a lower bound."""
    if key.startswith("max_"):
        return key[4:], "max"
    if key.startswith("min_"):
        return key[4:], "min"
    return key, "min"


def check_thresholds(metrics: Mapping[str, float], thresholds: Mapping[str, float]) -> list[Check]:
    checks = []
    for key, limit in thresholds.items():
        metric, bound = parse_threshold(key)
        checks.append(Check(metric=metric, bound=bound, limit=float(limit), value=metrics.get(metric)))
    return checks


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


RATE_SUFFIXES = ("_rate", "_share", "_found", "_coverage", "_met", "_at_k")


def fmt_metric(value: float | None, metric: str = "") -> str:
    """Rates with two decimals, counts as integers, '—' for a metric this prompt does not have."""
    if value is None:
        return "—"
    return f"{value:.2f}" if metric.endswith(RATE_SUFFIXES) else _fmt(value)
