"""Golden cases, recordings and their scoring: the data half of the prompt eval gate.

Layout, next to each prompt: `prompts/<name>/golden/<case>.case.yaml` (an input and the expectations)
and `prompts/<name>/golden/<case>.recording.json` (the model's raw answer to that input). A recording is
keyed by a hash of the exact request production would send for the case (rendered system + cacheable +
user parts, output schema, model, temperature, max_tokens), so any change to the prompt, its schema,
its parameters, the constitution or the way inputs are rendered makes the recording stale instead of
silently scoring an answer to a different question.

Scoring reuses the production code: citations are verified by the recall pipeline's verification and
findings go through the blind-spot guards (app/core/findings.py); this module only counts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.config import BlindSpotConfig
from app.core.adr import Adr, canonical_id_key, parse_adr
from app.core.citations import NOT_A_CANDIDATE, NOT_VERBATIM
from app.core.results import (
    BlindSpotResult,
    Candidate,
    Citation,
    Finding,
    RecallResult,
    Relevance,
    RetrievalResult,
    Severity,
    Usage,
)
from app.core.text import contains_verbatim, normalize
from app.pipeline.ports import LlmError, LlmRequest, LlmResponse
from app.prompts import Prompt

CASE_SUFFIX = ".case.yaml"
RECORDING_SUFFIX = ".recording.json"

# Where a recording's answer came from. Only SOURCE_LIVE is a real model's output.
SOURCE_HAND_WRITTEN = "hand-written (no API key available)"
SOURCE_FAKE_SERVER = "fake-server"
SOURCE_LIVE = "live"
SOURCES = (SOURCE_HAND_WRITTEN, SOURCE_FAKE_SERVER, SOURCE_LIVE)


class GoldenError(ValueError):
    """A case or recording file that cannot be read: reported per file, never a crash of the run."""


# --- files -----------------------------------------------------------------------------------------


class GoldenCase(BaseModel):
    """One golden case. `input` and `expect` are validated by the prompt's suite (RecallSuite, BlindSpotSuite)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    description: str
    sources: list[str] = Field(min_length=1)  # where the input comes from, with licence: cite, always
    input: dict[str, Any]
    expect: dict[str, Any] = Field(default_factory=dict)
    path: Path | None = Field(default=None, exclude=True)


class RecordedUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    estimated: bool = False  # True for hand-written answers: characters / 4, never billed

    def to_usage(self, model: str) -> Usage:
        return Usage(
            model=model,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            cost_usd=self.cost_usd,
            calls=1,
        )


class RecordedRequest(BaseModel):
    """The parameters the key covers, in the clear, so a reviewer sees what changed."""

    model_config = ConfigDict(extra="forbid")
    model: str
    temperature: float | None
    max_tokens: int
    prompt_files_hash: str


class Recording(BaseModel):
    model_config = ConfigDict(extra="forbid")
    case: str
    prompt: str
    key: str  # request_key() of the request this answers
    source: str  # SOURCE_HAND_WRITTEN | SOURCE_FAKE_SERVER | SOURCE_LIVE
    model: str  # the model that answered (for hand-written: the model the answer stands in for)
    date: str  # ISO date the answer was recorded (or last re-keyed, for hand-written answers)
    usage: RecordedUsage
    request: RecordedRequest
    base_url: str | None = None  # the Messages API the answer came from (live / fake-server)
    note: str | None = None
    text: str = ""  # the raw answer text
    data: Any = None  # the structured answer (tool input), when the API returned one

    @field_validator("source")
    @classmethod
    def _known_source(cls, value: str) -> str:
        """Every answer says where it came from; nothing unlabelled can pass for model output."""
        if value not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}")
        return value

    def response(self) -> LlmResponse:
        return LlmResponse(text=self.text, usage=self.usage.to_usage(self.model), data=self.data)


def request_key(request: LlmRequest) -> str:
    """sha256 over everything the model sees or is constrained by; metadata (run ids) excluded."""
    payload = {
        "prompt": request.prompt_name,
        "system": request.system,
        "cacheable": request.cacheable_prefix,
        "user": request.user,
        "schema": request.output_schema,
        "model": request.model,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


def golden_dir(prompt: Prompt) -> Path:
    return prompt.folder / "golden"


def load_cases(folder: Path) -> tuple[list[GoldenCase], list[str]]:
    """Every `*.case.yaml` in folder, sorted by id, and a message per unreadable file."""
    cases: list[GoldenCase] = []
    errors: list[str] = []
    for path in sorted(folder.glob(f"*{CASE_SUFFIX}")):
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
            case = GoldenCase.model_validate(raw)
        except (OSError, yaml.YAMLError, ValidationError) as exc:
            errors.append(f"{path.name}: {exc}")
            continue
        expected_id = path.name[: -len(CASE_SUFFIX)]
        if case.id != expected_id:
            errors.append(f"{path.name}: id {case.id!r} does not match the file name")
            continue
        cases.append(case.model_copy(update={"path": path}))
    return cases, errors


def recording_path(folder: Path, case_id: str) -> Path:
    return folder / f"{case_id}{RECORDING_SUFFIX}"


def load_recording(folder: Path, case_id: str) -> Recording | None:
    path = recording_path(folder, case_id)
    if not path.exists():
        return None
    try:
        return Recording.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise GoldenError(f"{path.name}: {exc}") from exc


def save_recording(folder: Path, recording: Recording) -> Path:
    path = recording_path(folder, recording.case)
    body = recording.model_dump(mode="json")
    path.write_text(json.dumps(body, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def estimate_tokens(chars: int) -> int:
    """Rough token count for hand-written answers (about 4 characters a token), labelled estimated."""
    return max(1, (chars + 3) // 4)


def request_chars(request: LlmRequest) -> int:
    return len(request.system) + len(request.cacheable_prefix or "") + len(request.user)


# --- scoring ---------------------------------------------------------------------------------------


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


class Suite(Protocol):
    """How one kind of prompt is fed from a case and scored. One instance per prompt name."""

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


RATE_SUFFIXES = ("_rate", "_share", "_found", "_coverage", "_met")


def fmt_metric(value: float | None, metric: str = "") -> str:
    """Rates with two decimals, counts as integers, '—' for a metric this prompt does not have."""
    if value is None:
        return "—"
    return f"{value:.2f}" if metric.endswith(RATE_SUFFIXES) else _fmt(value)


# --- inputs shared by the cases of every prompt -------------------------------------------------------

LIBRARY_DIR = "_golden"  # prompts/_golden/adrs/...: unmodified copies of the real ADRs the cases use


def library_path(prompt: Prompt, relative: str) -> Path:
    """A library file named by a case; refuses paths that leave the library."""
    root = (prompt.folder.parent / LIBRARY_DIR / "adrs").resolve()
    path = (root / relative).resolve()
    if root not in path.parents:
        raise GoldenError(f"{relative!r} is outside {root}")
    return path


def load_library_adr(prompt: Prompt, relative: str, name: str | None = None) -> Adr:
    """Parse a library ADR with the production parser, as the file `name` (default: its own name)."""
    data = library_path(prompt, relative).read_bytes()
    return _parse_cached(name or relative.rsplit("/", 1)[-1], data)


@functools.lru_cache(maxsize=512)
def _parse_cached(name: str, data: bytes) -> Adr:
    """Each case renders twice (capture, then answer) and cases share candidates: parse each file once."""
    return parse_adr(name, data)


class Phrase(BaseModel):
    """A finding the case expects (or forbids): any key phrase in its text, or one of its dedupe groups."""

    model_config = ConfigDict(extra="forbid")
    label: str
    any_of: list[str] = Field(default_factory=list)
    dedupe_group: list[str] = Field(default_factory=list)

    def matches(self, finding: Finding, fields: Sequence[str]) -> bool:
        if finding.dedupe_group and normalize(finding.dedupe_group) in {
            normalize(g) for g in self.dedupe_group
        }:
            return True
        text = "\\n".join(str(getattr(finding, f) or "") for f in fields).casefold()
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


# --- recall ----------------------------------------------------------------------------------------------


class RecallCandidateInput(BaseModel):
    """One retrieved candidate. Scores only matter to the pipeline through `qualified`."""

    model_config = ConfigDict(extra="forbid")
    adr: str  # library path
    dense: float | None = None
    bm25: float = 0.0
    fused: float = 0.0
    qualified: bool = True


class RecallInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    proposal: str  # library path of the proposal's text (for a corpus query: its masked query_text)
    proposal_path: str | None = None  # the file name the proposal has in its repository (default: basename)
    candidates: list[RecallCandidateInput | str] = Field(min_length=1)  # in retrieval order


class RecallExpect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    must_cite: list[str] = Field(default_factory=list)  # ids ("ADR-12") or file names of candidates
    must_not_cite: list[str] = Field(default_factory=list)
    min_kept_share: float | None = None  # kept by verification / returned by the model
    max_citations: int | None = None


class _GoldenIndex:
    """The AdrIndex port answering with the case's candidate set (retrieval is scored elsewhere)."""

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        self.candidates = tuple(candidates)

    def sync(self, adrs: Sequence[Adr]) -> Any:  # pragma: no cover - recall never syncs
        raise NotImplementedError

    def search(
        self,
        query: str,
        *,
        top_n: int = 20,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
    ) -> RetrievalResult:
        kept = [c for c in self.candidates if c.adr.path not in exclude_paths][:top_n]
        return RetrievalResult(candidates=tuple(kept), empty_reason=None, diagnostics={"golden": True})


class _StepLlm:
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


def _id_matches(want: str, adr_id: str, path: str) -> bool:
    w = want.strip()
    return canonical_id_key(w) == canonical_id_key(adr_id) or w == path.rsplit("/", 1)[-1]


class RecallSuite:
    """recall-pre-gate, run through the production stage (app/pipeline/recall.run_recall).

    The index port serves the case's candidates, so the prompt sees exactly what production would
    render for them, and the answer is verified by the production verification (app/core/citations).
    """

    prompt_name = "recall-pre-gate"

    def _run(self, case: GoldenCase, prompt: Prompt, llm: _StepLlm) -> RecallResult:
        from app.config import RepoConfig
        from app.pipeline.recall import run_recall

        inp = RecallInput.model_validate(case.input)
        proposal_name = inp.proposal_path or inp.proposal.rsplit("/", 1)[-1]
        proposal = load_library_adr(prompt, inp.proposal, proposal_name)
        candidates = []
        for item in inp.candidates:
            c = RecallCandidateInput(adr=item) if isinstance(item, str) else item
            adr = load_library_adr(prompt, c.adr)
            if adr.path == proposal.path:
                raise GoldenError(f"candidate {c.adr} has the proposal's file name")
            candidates.append(
                Candidate(
                    adr=adr,
                    dense=c.dense,
                    bm25=c.bm25,
                    bm25_rel=0.0,
                    fused=c.fused,
                    qualified=c.qualified,
                    why="golden case",
                )
            )
        config = RepoConfig()
        return run_recall(
            proposal,
            _GoldenIndex(candidates),
            [proposal, *(c.adr for c in candidates)],
            llm,
            config=config,
            prompts_dir=prompt.folder.parent,
        )

    def request(self, case: GoldenCase, prompt: Prompt) -> LlmRequest:
        llm = _StepLlm(self.prompt_name, None)
        result = self._run(case, prompt, llm)
        if len(llm.requests) != 1:
            errors = "; ".join(e.message for e in result.errors) or str(result.empty_reason)
            raise GoldenError(f"recall did not reach the model ({errors})")
        return llm.requests[0]

    def evaluate(self, case: GoldenCase, prompt: Prompt, answer: AnswerFn) -> Evaluation:
        expect = RecallExpect.model_validate(case.expect)
        llm = _StepLlm(self.prompt_name, answer)
        result = self._run(case, prompt, llm)
        usage = result.usage if result.usage.calls else (llm.response.usage if llm.response else Usage())
        llm_errors = [e for e in result.errors if e.node == "recall"]
        if result.empty_reason == "llm_failed" and llm_errors:
            kind, _, message = llm_errors[0].message.partition(": ")
            status: CaseStatus = kind if kind in ("not_json", "schema") else "llm_error"  # type: ignore[assignment]
            return Evaluation(
                status, message=llm_errors[0].message if status == "llm_error" else message, usage=usage
            )
        return Evaluation("ok", score=self.score(result, expect), usage=usage)

    def score(self, result: RecallResult, expect: RecallExpect) -> CaseScore:
        s = CaseScore()
        proposed = int(result.diagnostics.get("llm_count", 0))
        kept = result.citations
        dropped = dict(result.dropped)
        s.add("citations_returned", proposed)
        s.add("citations_kept", len(kept))
        s.add("ids_dropped_not_in_candidates", dropped.pop(NOT_A_CANDIDATE, 0))
        s.add("reasons_dropped_not_verbatim", dropped.pop(NOT_VERBATIM, 0))
        s.add("citations_dropped_other", sum(dropped.values()))
        for want in expect.must_cite:
            s.add("expected_citations")
            found = any(_id_matches(want, c.adr_id, c.path) for c in kept)
            s.add("expected_citations_found", float(found))
            s.expect(found, f"expected citation missing: {want}")
        for banned in expect.must_not_cite:
            present = any(_id_matches(banned, c.adr_id, c.path) for c in kept)
            s.add("forbidden_citations_present", float(present))
            s.expect(not present, f"forbidden citation present: {banned}")
        if expect.min_kept_share is not None and proposed:
            share = len(kept) / proposed
            s.expect(
                share >= expect.min_kept_share,
                f"verification kept {share:.2f} of the citations, expected >= {expect.min_kept_share}",
            )
        if expect.max_citations is not None:
            s.expect(
                len(kept) <= expect.max_citations,
                f"{len(kept)} citations, expected at most {expect.max_citations}",
            )
        s.details = {
            "kept": [
                {"adr_id": c.adr_id, "relevance": c.relevance, "reason": c.relevance_reason} for c in kept
            ],
            "dropped": dict(result.dropped),
            "empty_reason": result.empty_reason,
        }
        return s

    def metrics(self, scores: Sequence[CaseScore]) -> dict[str, float]:
        t = summed(scores)
        return {
            "citations_returned": t.get("citations_returned", 0.0),
            "ids_dropped_not_in_candidates": t.get("ids_dropped_not_in_candidates", 0.0),
            "reasons_dropped_not_verbatim": t.get("reasons_dropped_not_verbatim", 0.0),
            "citations_dropped_other": t.get("citations_dropped_other", 0.0),
            "kept_share": ratio(t.get("citations_kept", 0.0), t.get("citations_returned", 0.0)),
            "expected_citations_found": ratio(
                t.get("expected_citations_found", 0.0), t.get("expected_citations", 0.0)
            ),
            "forbidden_citations_present": t.get("forbidden_citations_present", 0.0),
        }

    def default_thresholds(self) -> Mapping[str, float]:
        return {
            "max_ids_dropped_not_in_candidates": 0,
            "kept_share": 0.8,
            "expected_citations_found": 0.75,
            "max_forbidden_citations_present": 0,
        }


# --- blind spots ------------------------------------------------------------------------------------------

_CRITIC_NODES = {
    "blindspot-devils-advocate": "devils_advocate",
    "blindspot-premortem": "premortem",
    "blindspot-adjacent-domain": "adjacent_domain",
}
# Text a user reads in a finding: what "must find" looks in. "Must not find" only looks at what the
# finding is about (its title and topic key), since evidence legitimately quotes the ADR's own risks.
MUST_FIND_FIELDS = ("title", "evidence", "suggested_action")
MUST_NOT_FIND_FIELDS = ("title",)


class CitationInput(BaseModel):
    """A recall citation given to the critics as context (as the recall stage would hand it over)."""

    model_config = ConfigDict(extra="forbid")
    adr_id: str
    path: str = ""
    title: str
    status: str = "accepted"
    relevance: Relevance = "med"
    relevance_reason: str
    superseded_by: str | None = None


class BlindSpotInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    adr: str  # library path of the ADR under review (prompts/_golden/adrs/...)
    citations: list[CitationInput] = Field(default_factory=list)
    seed: int = 0  # the Devil's Advocate's perspective draw
    # Judge cases: the critics' answers (their prompts' JSON), the Judge's input. Keeps cases independent.
    critic_answers: dict[str, Any] = Field(default_factory=dict)


class BlindSpotExpect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    categories: list[str] = Field(default_factory=list)  # pre-mortem categories the answer must cover
    must_find: list[Phrase] = Field(default_factory=list)
    must_not_find: list[Phrase] = Field(default_factory=list)  # e.g. what the ADR's own Risks already say
    findings: Bounds | None = None  # count after the guards
    severity: dict[Severity, Bounds] = Field(default_factory=dict)


class _DagLlm:
    """The LLM port for one case's run of the real blind-spot DAG.

    The step under test gets `answer` (None: capture its request and fail it); the Judge case's critics
    get the case's fixed answers; every other step fails, which the DAG handles as a degraded run.
    """

    def __init__(self, target: str, answer: AnswerFn | None, fixed: Mapping[str, Any]) -> None:
        self.target = target
        self.answer = answer
        self.fixed = fixed
        self.requests: list[LlmRequest] = []
        self.response: LlmResponse | None = None
        self._lock = threading.Lock()

    def complete(self, request: LlmRequest) -> LlmResponse:
        if request.prompt_name == self.target:
            with self._lock:
                self.requests.append(request)
            if self.answer is None:
                raise LlmError("refused", "golden eval: request captured, not answered")
            self.response = self.answer(request)
            return self.response
        if request.prompt_name in self.fixed:
            data = self.fixed[request.prompt_name]
            return LlmResponse(text=json.dumps(data, ensure_ascii=False), usage=Usage(), data=data)
        raise LlmError("refused", "golden eval: this step is not part of the case")


class BlindSpotSuite:
    """A critic or the Judge, run inside the production DAG (app/pipeline/blindspot.run_blindspots).

    A critic case runs the DAG with only that critic answering: its findings then go through the same
    code guards as an un-judged run (dedupe, drop what the ADR's own risks cover). A Judge case feeds
    the critics' answers it carries and scores the judged, guarded result: what the comment would show.
    """

    def __init__(self, prompt_name: str) -> None:
        self.prompt_name = prompt_name
        self.node = _CRITIC_NODES.get(prompt_name, "judge")

    def _inputs(self, case: GoldenCase, prompt: Prompt) -> tuple[BlindSpotInput, Adr, dict[str, Any]]:
        from app.pipeline.blindspot import CRITIC_PROMPTS

        inp = BlindSpotInput.model_validate(case.input)
        adr = load_library_adr(prompt, inp.adr)
        fixed = {}
        for node, answer in inp.critic_answers.items():
            if node not in CRITIC_PROMPTS:
                raise GoldenError(f"critic_answers: unknown critic {node!r}")
            fixed[CRITIC_PROMPTS[node]] = answer
        if self.node == "judge" and not fixed:
            raise GoldenError("a Judge case needs critic_answers")
        return inp, adr, fixed

    def _run(self, case: GoldenCase, prompt: Prompt, llm: _DagLlm) -> BlindSpotResult:
        from app.pipeline.blindspot import run_blindspots

        inp, adr, _fixed = self._inputs(case, prompt)
        adjacent = self.node == "adjacent_domain" or "adjacent_domain" in inp.critic_answers
        citations = [Citation(**c.model_dump()) for c in inp.citations]
        return run_blindspots(
            adr,
            citations,
            llm,
            config=BlindSpotConfig(enabled=True, adjacent_domain=adjacent),
            seed=inp.seed,
            prompts_dir=prompt.folder.parent,
        )

    def request(self, case: GoldenCase, prompt: Prompt) -> LlmRequest:
        _inp, _adr, fixed = self._inputs(case, prompt)
        llm = _DagLlm(self.prompt_name, None, fixed)
        result = self._run(case, prompt, llm)
        if len(llm.requests) != 1:
            errors = "; ".join(f"{e.node}: {e.message}" for e in result.errors)
            raise GoldenError(f"the DAG did not reach {self.prompt_name} ({errors})")
        return llm.requests[0]

    def evaluate(self, case: GoldenCase, prompt: Prompt, answer: AnswerFn) -> Evaluation:
        _inp, _adr, fixed = self._inputs(case, prompt)
        expect = BlindSpotExpect.model_validate(case.expect)
        llm = _DagLlm(self.prompt_name, answer, fixed)
        result = self._run(case, prompt, llm)
        usage = result.usage_by_node.get(self.node, Usage())
        if llm.response is not None and not usage.calls:
            usage = llm.response.usage
        mine = [e for e in result.errors if e.node == self.node]
        if mine:
            kind, _, message = mine[0].message.partition(": ")
            status: CaseStatus = kind if kind in ("llm_error", "not_json", "schema") else "llm_error"  # type: ignore[assignment]
            return Evaluation(
                status, message=mine[0].message if status == "llm_error" else message, usage=usage
            )
        return Evaluation("ok", score=self.score(result, expect), usage=usage)

    def score(self, result: BlindSpotResult, expect: BlindSpotExpect) -> CaseScore:
        s = CaseScore()
        findings = result.findings
        total = len(findings) + result.omitted_count
        s.add("findings", total)
        for severity, n in result.total_count_by_severity.items():
            s.add(f"findings_{severity}", n)
        s.add(
            "dropped_by_guards",
            sum(result.dropped.get(k, 0) for k in ("merged_duplicates", "covered_by_adr")),
        )
        for want in expect.must_find:
            s.add("expected_findings")
            found = any(want.matches(f, MUST_FIND_FIELDS) for f in findings)
            s.add("expected_findings_found", float(found))
            s.expect(found, f"expected finding not found: {want.label}")
        for banned in expect.must_not_find:
            hits = [f.title for f in findings if banned.matches(f, MUST_NOT_FIND_FIELDS)]
            s.add("own_risk_duplicates_present", len(hits))
            s.expect(
                not hits,
                f"finding the ADR already covers is present ({banned.label}): {hits[0] if hits else ''}",
            )
        if expect.categories:
            required = [c for c in expect.categories]
            covered = [c for c in required if c not in result.coverage_gaps]
            s.add("categories_required", len(required))
            s.add("categories_covered", len(covered))
            s.expect(
                len(covered) == len(required),
                f"pre-mortem categories not covered: {sorted(set(required) - set(covered))}",
            )
        bounds_ok = True
        if expect.findings is not None and not expect.findings.holds(total):
            bounds_ok = False
            s.failures.append(f"{total} findings, expected {expect.findings.describe()}")
        for severity, bounds in expect.severity.items():
            n = int(result.total_count_by_severity.get(severity, 0))
            if not bounds.holds(n):
                bounds_ok = False
                s.failures.append(f"{n} {severity} findings, expected {bounds.describe()}")
        s.add("bounds_cases", 1.0 if (expect.findings or expect.severity) else 0.0)
        s.add("bounds_met", 1.0 if (expect.findings or expect.severity) and bounds_ok else 0.0)
        s.details = {
            "status": result.status,
            "findings": [
                {"severity": f.severity, "title": f.title, "dedupe_group": f.dedupe_group} for f in findings
            ],
            "coverage_gaps": list(result.coverage_gaps),
            "dropped": dict(result.dropped),
        }
        return s

    def metrics(self, scores: Sequence[CaseScore]) -> dict[str, float]:
        t = summed(scores)
        out = {
            "findings": t.get("findings", 0.0),
            **{
                f"findings_{sev}": t.get(f"findings_{sev}", 0.0)
                for sev in ("critical", "high", "medium", "low")
            },
            "expected_findings_found": ratio(
                t.get("expected_findings_found", 0.0), t.get("expected_findings", 0.0)
            ),
            "own_risk_duplicates_present": t.get("own_risk_duplicates_present", 0.0),
            "dropped_by_guards": t.get("dropped_by_guards", 0.0),
            "severity_bounds_met": ratio(t.get("bounds_met", 0.0), t.get("bounds_cases", 0.0)),
        }
        if self.node == "premortem":
            out["category_coverage"] = ratio(
                t.get("categories_covered", 0.0), t.get("categories_required", 0.0)
            )
        return out

    def default_thresholds(self) -> Mapping[str, float]:
        base = {
            "expected_findings_found": 0.75,
            "max_own_risk_duplicates_present": 0,
            "severity_bounds_met": 0.8,
        }
        if self.node == "premortem":
            base["category_coverage"] = 1.0
        return base


def suite_for(prompt_name: str) -> Suite | None:
    if prompt_name == "recall-pre-gate":
        return RecallSuite()
    if prompt_name in _CRITIC_NODES or prompt_name == "blindspot-judge":
        return BlindSpotSuite(prompt_name)
    return None
