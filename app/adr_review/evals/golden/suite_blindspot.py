"""The blind-spot suites: a critic or the Judge, run inside the production DAG with fakes at its ports."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adr_review.config import BlindSpotConfig
from adr_review.core.adr import Adr, parse_adr
from adr_review.core.results import BlindSpotResult, Citation, Finding, Relevance, Severity, Usage
from adr_review.core.text import is_japanese
from adr_review.evals.golden.cases import LIBRARY_DIR, GoldenCase, GoldenError, library_path, load_library_adr
from adr_review.evals.golden.scoring import (
    AnswerFn,
    Bounds,
    CaseScore,
    Evaluation,
    Phrase,
    ratio,
    step_failure,
    summed,
)
from adr_review.pipeline.adr.blindspot import CRITIC_PROMPTS, JUDGE_PROMPT, run_blindspots
from adr_review.pipeline.adr.blindspot_cover import COVER_CHECK_PROMPT
from adr_review.pipeline.ports import LlmError, LlmRequest, LlmResponse
from adr_review.prompts import CONSTITUTION_FILE, Prompt, PromptFiles

CRITIC_NODES: Mapping[str, str] = {prompt: node for node, prompt in CRITIC_PROMPTS.items()}
BLINDSPOT_PROMPTS = (*CRITIC_NODES, JUDGE_PROMPT)
# What the model itself says in a finding: what "must find" looks in (never the `quote` of the ADR:
# a generic finding that quotes the right paragraph has not found anything). "Must not find" only looks
# at what the finding is about (its title and topic key).
MUST_FIND_FIELDS = ("title", "gap", "suggested_action")
MUST_NOT_FIND_FIELDS = ("title",)
LANGUAGE_FIELDS = ("title", "gap", "suggested_action")  # the free text the model is asked to write


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
    # Judge cases: the independent check's answers ({covers, reason}), one per claim it is asked about,
    # in order. An input like the critics' answers, not scored here (the check has its own cases):
    # every exclusion in a covering section reaches the check (finding_checks.check_exclusion).
    cover_checks: list[dict[str, Any]] = Field(default_factory=list)
    # The repo setting `language`: what the models are asked to write (None: the ADR's own language).
    language: Literal["en", "ja"] | None = None
    # Ablation: exact passages of the ADR's file removed before it is parsed (e.g. one Risks bullet), so
    # one case can show a finding is raised when the ADR is silent and excluded when it is not.
    remove: list[str] = Field(default_factory=list)


class BlindSpotExpect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    categories: list[str] = Field(default_factory=list)  # pre-mortem categories the answer must cover
    must_find: list[Phrase] = Field(default_factory=list)
    # e.g. what the ADR's own Risks already say, or a finding a reviewer dismissed (dismissed.py)
    must_not_find: list[Phrase] = Field(default_factory=list)
    must_exclude: list[Phrase] = Field(default_factory=list)  # listed as "already covered by the ADR"
    findings: Bounds | None = None  # count after the guards
    severity: dict[Severity, Bounds] = Field(default_factory=dict)


class _DagLlm:
    """The LLM port for one case's run of the real blind-spot DAG.

    The step under test gets `answer` (None: capture its request and fail it); the Judge case's critics
    get the case's fixed answers, the cover check its `checks` in order; every other step fails, which
    the DAG handles as a degraded run (an unanswered check shows the finding).
    """

    def __init__(
        self, target: str, answer: AnswerFn | None, fixed: Mapping[str, Any], checks: Sequence[Any] = ()
    ) -> None:
        self.target = target
        self.answer = answer
        self.fixed = fixed
        self.checks = list(checks)
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
        if request.prompt_name == COVER_CHECK_PROMPT and self.checks:
            with self._lock:
                data = self.checks.pop(0)
            return LlmResponse(text=json.dumps(data, ensure_ascii=False), usage=Usage(), data=data)
        raise LlmError("refused", "golden eval: this step is not part of the case")


class BlindSpotSuite:
    """A critic or the Judge, run inside the production DAG (app/adr_review/pipeline/blindspot.run_blindspots).

    A critic case runs the DAG with only that critic answering: its findings then go through the same
    code guards as an un-judged run (dedupe, drop what the ADR's own risks cover). A Judge case feeds
    the critics' answers it carries and scores the judged, guarded result: what the comment would show.
    """

    def __init__(self, prompt_name: str) -> None:
        self.prompt_name = prompt_name
        self.node = CRITIC_NODES.get(prompt_name, "judge")
        # The Devil's Advocate renders the perspectives drawn from the constitution.
        own = (CONSTITUTION_FILE,) if self.node == "devils_advocate" else ()
        self.reads: tuple[str, ...] = (f"{LIBRARY_DIR}/*", *own)

    def _inputs(self, case: GoldenCase, prompt: Prompt) -> tuple[BlindSpotInput, Adr, dict[str, Any]]:
        inp = BlindSpotInput.model_validate(case.input)
        adr = _ablated(prompt, inp) if inp.remove else load_library_adr(prompt, inp.adr)
        fixed = {}
        for node, answer in inp.critic_answers.items():
            if node not in CRITIC_PROMPTS:
                raise GoldenError(f"critic_answers: unknown critic {node!r}")
            fixed[CRITIC_PROMPTS[node]] = answer
        if self.node == "judge" and not fixed:
            raise GoldenError("a Judge case needs critic_answers")
        return inp, adr, fixed

    def _run(self, case: GoldenCase, prompt: Prompt, llm: _DagLlm) -> BlindSpotResult:
        inp, adr, _fixed = self._inputs(case, prompt)
        adjacent = self.node == "adjacent_domain" or "adjacent_domain" in inp.critic_answers
        citations = [Citation(**c.model_dump()) for c in inp.citations]
        return run_blindspots(
            adr,
            citations,
            llm,
            # The prompt is scored on everything it kept: the comment's noise budget (cap, confidence
            # threshold) is a display choice with its own tests, not part of the prompt's content.
            config=BlindSpotConfig(
                enabled=True, adjacent_domain=adjacent, max_findings=10_000, min_confidence=0.0
            ),
            seed=inp.seed,
            prompts=PromptFiles(prompt.folder.parent),
            language=inp.language,
        )

    def request(self, case: GoldenCase, prompt: Prompt) -> LlmRequest:
        _inp, _adr, fixed = self._inputs(case, prompt)
        llm = _DagLlm(self.prompt_name, None, fixed, _inp.cover_checks)
        result = self._run(case, prompt, llm)
        if len(llm.requests) != 1:
            errors = "; ".join(f"{e.node}: {e.message}" for e in result.errors)
            raise GoldenError(f"the DAG did not reach {self.prompt_name} ({errors})")
        return llm.requests[0]

    def evaluate(self, case: GoldenCase, prompt: Prompt, answer: AnswerFn) -> Evaluation:
        inp, adr, fixed = self._inputs(case, prompt)
        expect = BlindSpotExpect.model_validate(case.expect)
        llm = _DagLlm(self.prompt_name, answer, fixed, inp.cover_checks)
        result = self._run(case, prompt, llm)
        usage = result.usage_by_node.get(self.node, Usage())
        if llm.response is not None and not usage.calls:
            usage = llm.response.usage
        mine = [e for e in result.errors if e.node == self.node]
        if mine:
            return step_failure(mine[0].message, usage)
        language = inp.language or adr.language
        return Evaluation("ok", score=self.score(result, expect, language), usage=usage)

    def score(self, result: BlindSpotResult, expect: BlindSpotExpect, language: str = "en") -> CaseScore:
        s = CaseScore()
        findings = result.findings
        total = len(findings) + result.omitted_count + result.low_confidence_count
        s.add("findings", total)
        s.add("findings_unverified", len(result.unverified))
        s.add("quotes_checked", total + len(result.unverified))
        s.add("quotes_verified", total)
        for f in (*findings, *result.unverified):
            s.add("language_checked")
            s.add("language_ok", float(_written_in(f, language)))
        wrong = [f.title for f in (*findings, *result.unverified) if not _written_in(f, language)]
        s.expect(not wrong, f"{len(wrong)} finding(s) not written in {language}: {wrong[:1]}")
        s.add("exclusions", len(result.exclusions))
        s.add("exclusions_unverified", result.dropped.get("judge_exclusion_unverified", 0))
        s.add(
            "exclusions_rejected",
            sum(
                result.dropped.get(k, 0)
                for k in (
                    "judge_exclusion_not_covering",
                    "judge_exclusion_off_subject",
                    "judge_exclusion_not_confirmed",
                )
            ),
        )
        for want in expect.must_exclude:
            s.add("expected_exclusions")
            found = any(want.matches(x, MUST_NOT_FIND_FIELDS) for x in result.exclusions)
            s.add("expected_exclusions_found", float(found))
            s.expect(found, f"expected exclusion missing: {want.label}")
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
                f"a finding the case rules out is present ({banned.label}): {hits[0] if hits else ''}",
            )
        if expect.categories:
            required = list(expect.categories)
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
            "unverified": [{"title": f.title, "why": f.unverified} for f in result.unverified],
            "exclusions": [{"title": x.title, "by": x.by, "quote": x.quote} for x in result.exclusions],
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
            "findings_unverified": t.get("findings_unverified", 0.0),
            "quote_verified_rate": ratio(t.get("quotes_verified", 0.0), t.get("quotes_checked", 0.0)),
            "output_language_rate": ratio(t.get("language_ok", 0.0), t.get("language_checked", 0.0)),
            "dropped_by_guards": t.get("dropped_by_guards", 0.0),
            "severity_bounds_met": ratio(t.get("bounds_met", 0.0), t.get("bounds_cases", 0.0)),
        }
        if self.node == "judge":
            out["exclusions"] = t.get("exclusions", 0.0)
            out["exclusions_unverified"] = t.get("exclusions_unverified", 0.0)
            out["exclusions_rejected"] = t.get("exclusions_rejected", 0.0)
            out["expected_exclusions_found"] = ratio(
                t.get("expected_exclusions_found", 0.0), t.get("expected_exclusions", 0.0)
            )
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
            "quote_verified_rate": 0.9,
            "output_language_rate": 0.95,
        }
        if self.node == "premortem":
            base["category_coverage"] = 1.0
        if self.node == "judge":
            base["expected_exclusions_found"] = 0.75
            base["max_exclusions_unverified"] = 0
        return base


def _written_in(finding: Finding, language: str) -> bool:
    """Whether the model's own words in a finding are in `language` (quotes of the ADR are not looked at)."""
    text = " ".join(str(getattr(finding, f) or "") for f in LANGUAGE_FIELDS)
    return is_japanese(text) if language == "ja" else not is_japanese(text)


def _ablated(prompt: Prompt, inp: BlindSpotInput) -> Adr:
    """The case's ADR with `remove` cut out of its file, parsed as production would parse that file."""
    data = library_path(prompt, inp.adr).read_text(encoding="utf-8")
    for passage in inp.remove:
        if passage not in data:
            raise GoldenError(f"remove: {passage[:60]!r} is not in {inp.adr}")
        data = data.replace(passage, "", 1)
    return parse_adr(inp.adr.rsplit("/", 1)[-1], data.encode("utf-8"))
