"""The blind-spot DAG (seed 002, ADR-0071): critics in parallel, then a Judge, all advisory.

    devils_advocate ─┐
    premortem ───────┼──> judge ──> code guards (normalise, dedupe, drop own risks, cap) ──> BlindSpotResult
    adjacent_domain ─┘ (optional)

Degradation, never failure: a critic that fails is left out and recorded; if every critic fails the
stage is skipped; if the Judge fails the critics' findings are shown un-judged after the code-level
dedupe. run_blindspots never raises for a model, prompt or checkpoint problem: every one becomes an
entry in `errors` with its node. Each node goes through the StageMemo, so a re-run after a crash reuses
stored answers (and still accounts for their usage) instead of paying for them again.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ValidationError

from app.config import BlindSpotConfig
from app.core.adr import Adr
from app.core.findings import (
    cap_findings,
    count_by_severity,
    coverage_gaps,
    dedupe_findings,
    exclude_covered,
    own_risk_items,
)
from app.core.perspectives import ConstitutionError, Perspective, draw_perspectives, parse_constitution
from app.core.results import BlindSpotResult, Citation, Finding, StageError, Usage
from app.core.text import fold_whitespace
from app.pipeline.blindspot_answers import (
    AdjacentDomainAnswer,
    DevilsAdvocateAnswer,
    JudgeAnswer,
    PremortemAnswer,
)
from app.pipeline.ports import LlmPort, StageMemo, no_memo
from app.pipeline.structured import StepFailed, StepOverrides, call_prompt
from app.prompts import PROMPTS_DIR, Prompt, PromptError, load_prompt

log = logging.getLogger(__name__)

CRITIC_PROMPTS: Mapping[str, str] = {
    "devils_advocate": "blindspot-devils-advocate",
    "premortem": "blindspot-premortem",
    "adjacent_domain": "blindspot-adjacent-domain",
}
JUDGE_PROMPT = "blindspot-judge"
CONSTITUTION_FILE = "constitution.yaml"
PERSPECTIVES_PER_RUN = 3
MAX_COUNTER_ARGUMENTS = 5
MAX_ANALOGIES = 3
# Sections whose statements count as "the ADR already covers this" (the seeds keep their known
# downsides under Consequences, so those count too).
OWN_RISK_SECTIONS = ("risks", "alternatives", "consequences")
MAX_ADR_CHARS = 60_000

_CATEGORY_TEXT = {
    "technical": "technical: architecture, code, data, dependencies, performance, security",
    "operational": "operational: running it day to day, incidents, on-call, deployments, cost control",
    "business_regulatory": "business / regulatory: customers, contracts, money, law, compliance, audit",
    "cognitive": "cognitive: human judgement, bias, over-trust, alert fatigue, knowledge held by one person",
}
_LANGUAGE_NAMES = {"ja": "Japanese (日本語)", "en": "English"}
# Our own delimiter tags: untrusted text must not be able to close them and talk to the model.
_OUR_TAGS = re.compile(r"<\s*/?\s*(adr_document|adr_own_risks|critic_findings)\b[^>]*>", re.IGNORECASE)


def load_constitution(prompts_dir: Path | None = None) -> tuple[Perspective, ...]:
    path = (prompts_dir or PROMPTS_DIR) / CONSTITUTION_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConstitutionError(f"{path}: {exc}") from exc
    return parse_constitution(data)


def run_blindspots(
    proposal: Adr,
    citations: Sequence[Citation],
    llm: LlmPort,
    *,
    config: BlindSpotConfig,
    seed: int,
    memo: StageMemo = no_memo,
    prompts_dir: Path | None = None,
    overrides: Mapping[str, StepOverrides] | None = None,
) -> BlindSpotResult:
    """Run the critics concurrently, then the Judge; see the module docstring for the failure rules.

    overrides: per prompt name (e.g. from repo config `llm.prompts`), replacing meta.yaml model,
    temperature or max_tokens.
    """
    if not config.enabled:
        return _empty("disabled", seed, (), (), {}, skipped_reason="disabled")

    nodes = ["devils_advocate", "premortem"] + (["adjacent_domain"] if config.adjacent_domain else [])
    errors: list[StageError] = []
    perspectives: tuple[Perspective, ...] = ()
    try:
        k = _meta_int(
            load_prompt(CRITIC_PROMPTS["devils_advocate"], prompts_dir), "perspectives", PERSPECTIVES_PER_RUN
        )
    except PromptError:
        k = PERSPECTIVES_PER_RUN  # the critic reports its own prompt error
    try:
        perspectives = draw_perspectives(load_constitution(prompts_dir), seed, k)
    except ConstitutionError as exc:
        errors.append(StageError("devils_advocate", f"constitution: {exc}"))
        nodes.remove("devils_advocate")
    selected = tuple(p.id for p in perspectives)
    log.info("constitution_perspectives_selected", extra={"seed": seed, "perspectives": list(selected)})

    base = _base_variables(proposal, citations)
    ctx = _Context(llm=llm, memo=memo, prompts_dir=prompts_dir, overrides=overrides or {})
    with ThreadPoolExecutor(max_workers=max(1, len(nodes)), thread_name_prefix="blindspot") as pool:
        futures = [
            pool.submit(_run_critic, ctx, node, base, perspectives, proposal.language) for node in nodes
        ]
        outcomes = [f.result() for f in futures]

    usage_by_node: dict[str, Usage] = {}
    gaps: tuple[str, ...] = ()
    for out in outcomes:
        if out.usage.calls or out.usage.input_tokens or out.usage.output_tokens:
            usage_by_node[out.node] = out.usage
        if out.error:
            errors.append(out.error)
        if out.coverage_gaps is not None:
            gaps = out.coverage_gaps
    succeeded = [o for o in outcomes if o.error is None]
    if not succeeded:
        log.warning("blindspot_skipped", extra={"reason": "all_critics_failed"})
        return _empty(
            "skipped", seed, selected, tuple(errors), usage_by_node, skipped_reason="all_critics_failed"
        )

    critic_findings = [f for o in succeeded for f in o.findings]
    by_id = {fid: f for o in succeeded for fid, f in zip(o.ids, o.findings, strict=True)}
    judged = _run_judge(
        ctx,
        base,
        proposal,
        succeeded,
        failed=[e.node for e in errors if e.node in CRITIC_PROMPTS],
    )
    if judged.usage.calls or judged.usage.input_tokens:
        usage_by_node["judge"] = judged.usage
    dropped: dict[str, int] = {}
    status: Literal["judged", "unjudged"]
    if judged.answer is None:
        if judged.error:
            errors.append(judged.error)
        status = "unjudged"
        findings: Sequence[Finding] = critic_findings
        self_assessment = ""
    else:
        status = "judged"
        allowed = tuple(o.node for o in succeeded)
        findings = [_judged_finding(jf, allowed, by_id) for jf in judged.answer.findings]
        self_assessment = judged.answer.self_assessment
        dropped["judge_excluded_as_covered"] = len(judged.answer.excluded)

    findings, merged = dedupe_findings(findings)
    items = own_risk_items(proposal.sections, OWN_RISK_SECTIONS)
    findings, covered = exclude_covered(findings, items)
    dropped["merged_duplicates"] = merged
    dropped["covered_by_adr"] = len(covered)
    shown, omitted = cap_findings(findings, config.max_findings)
    return BlindSpotResult(
        status=status,
        findings=shown,
        omitted_count=omitted,
        total_count_by_severity=count_by_severity(findings),
        self_assessment=self_assessment,
        selected_perspectives=selected,
        seed=seed,
        coverage_gaps=gaps,
        errors=tuple(errors),
        usage_by_node=usage_by_node,
        dropped=dropped,
    )


# --- nodes -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    llm: LlmPort
    memo: StageMemo
    prompts_dir: Path | None
    overrides: Mapping[str, StepOverrides]


@dataclass(frozen=True)
class _CriticOutcome:
    node: str
    usage: Usage
    findings: tuple[Finding, ...] = ()
    ids: tuple[str, ...] = ()
    details: tuple[str, ...] = ()
    coverage_gaps: tuple[str, ...] | None = None
    error: StageError | None = None


@dataclass(frozen=True)
class _JudgeOutcome:
    usage: Usage
    answer: JudgeAnswer | None = None
    error: StageError | None = None


_ANSWER_MODELS: Mapping[str, type[BaseModel]] = {
    "devils_advocate": DevilsAdvocateAnswer,
    "premortem": PremortemAnswer,
    "adjacent_domain": AdjacentDomainAnswer,
    "judge": JudgeAnswer,
}
_ID_PREFIX = {"devils_advocate": "da", "premortem": "pm", "adjacent_domain": "ad"}


def _memo_step(
    ctx: _Context, stage: str, node: str, prompt: Prompt, variables: Mapping[str, Any]
) -> tuple[BaseModel, Usage]:
    """One node through the memo: call, validate (schema, then pydantic), store answer + usage."""
    model_cls = _ANSWER_MODELS[node]

    def compute() -> dict[str, Any]:
        answer = call_prompt(ctx.llm, prompt, variables, ctx.overrides.get(prompt.name))
        usage = answer.usage if answer.usage.model else replace(answer.usage, model=answer.request.model)
        try:
            model_cls.model_validate(answer.data)
        except ValidationError as exc:
            raise StepFailed("schema", _short(exc), usage, answer.raw_text) from exc
        return {
            "answer": answer.data,
            "usage": asdict(usage),
            "prompt": prompt.name,
            "model": answer.request.model,
            "temperature": answer.request.temperature,
        }

    stored = ctx.memo(stage, compute)
    try:
        parsed = model_cls.model_validate(stored["answer"])
    except (KeyError, TypeError, ValidationError) as exc:
        raise StepFailed("stored", f"stored answer does not validate: {_short(exc)}", Usage()) from exc
    return parsed, _usage_from(stored.get("usage"))


def _run_critic(
    ctx: _Context,
    node: str,
    base: Mapping[str, Any],
    perspectives: Sequence[Perspective],
    language: str,
) -> _CriticOutcome:
    try:
        prompt = load_prompt(CRITIC_PROMPTS[node], ctx.prompts_dir)
        variables = dict(base)
        if node == "devils_advocate":
            variables["perspectives"] = [
                dict(zip(("name", "question"), p.localized(language), strict=True), id=p.id)
                for p in perspectives
            ]
        elif node == "premortem":
            variables["categories"] = [{"id": k, "description": v} for k, v in _CATEGORY_TEXT.items()]
        answer, usage = _memo_step(ctx, f"critic:{node}", node, prompt, variables)
    except StepFailed as exc:
        log.warning("blindspot_node_failed", extra={"node": node, "kind": exc.kind, "error": exc.message})
        return _CriticOutcome(node, exc.usage, error=StageError(node, f"{exc.kind}: {exc.message}"))
    except PromptError as exc:
        return _CriticOutcome(node, Usage(), error=StageError(node, f"prompt: {exc}"))
    except Exception as exc:  # advisory stage: an unexpected failure is one node's error, not the run's
        log.exception("blindspot_node_crashed", extra={"node": node})
        return _CriticOutcome(node, Usage(), error=StageError(node, f"{type(exc).__name__}: {exc}"))

    gaps: tuple[str, ...] | None = None
    if isinstance(answer, DevilsAdvocateAnswer):
        limit = _meta_int(prompt, "max_counter_arguments", MAX_COUNTER_ARGUMENTS)
        findings = answer.findings(limit)
        details = tuple(c.argument for c in answer.counter_arguments[:limit])
    elif isinstance(answer, PremortemAnswer):
        findings = answer.findings(dict(prompt.meta.thresholds))
        details = tuple(
            f"{s.scenario} (FMEA {s.severity_score}x{s.probability}x{s.impact}={s.risk_priority})"
            for s in answer.scenarios
        )
        gaps = coverage_gaps(answer.categories)
        if gaps:
            log.warning("premortem_coverage_gap", extra={"missing": list(gaps)})
    elif isinstance(answer, AdjacentDomainAnswer):
        limit = _meta_int(prompt, "max_analogies", MAX_ANALOGIES)
        findings = answer.findings(limit)
        details = tuple(f"{a.domain}: {a.lesson}" for a in answer.analogies[:limit])
    else:  # pragma: no cover - _ANSWER_MODELS maps every critic
        raise TypeError(type(answer).__name__)
    ids = tuple(f"{_ID_PREFIX[node]}-{i}" for i in range(1, len(findings) + 1))
    return _CriticOutcome(node, usage, findings, ids, details, gaps)


def _run_judge(
    ctx: _Context,
    base: Mapping[str, Any],
    proposal: Adr,
    critics: Sequence[_CriticOutcome],
    failed: Sequence[str],
) -> _JudgeOutcome:
    items = [
        {"id": fid, **_finding_for_judge(f), "detail": detail}
        for o in critics
        for fid, f, detail in zip(o.ids, o.findings, o.details, strict=True)
    ]
    own = "\n\n".join(
        f"[{name}]\n{proposal.sections[name].strip()}"
        for name in OWN_RISK_SECTIONS
        if (proposal.sections.get(name) or "").strip()
    )
    variables = {
        **base,
        "critics_ran": [o.node for o in critics],
        "critics_failed": list(dict.fromkeys(failed)),
        "own_risks": _as_data(own),
        "findings_json": _as_data(json.dumps(items, ensure_ascii=False, indent=1)),
    }
    try:
        prompt = load_prompt(JUDGE_PROMPT, ctx.prompts_dir)
        answer, usage = _memo_step(ctx, judge_stage(critics, failed), "judge", prompt, variables)
    except StepFailed as exc:
        log.warning("blindspot_node_failed", extra={"node": "judge", "kind": exc.kind, "error": exc.message})
        return _JudgeOutcome(exc.usage, error=StageError("judge", f"{exc.kind}: {exc.message}"))
    except PromptError as exc:
        return _JudgeOutcome(Usage(), error=StageError("judge", f"prompt: {exc}"))
    except Exception as exc:  # advisory stage: degrade to un-judged findings
        log.exception("blindspot_node_crashed", extra={"node": "judge"})
        return _JudgeOutcome(Usage(), error=StageError("judge", f"{type(exc).__name__}: {exc}"))
    assert isinstance(answer, JudgeAnswer)
    return _JudgeOutcome(usage, answer)


def judge_stage(critics: Sequence[_CriticOutcome], failed: Sequence[str]) -> str:
    """The Judge's checkpoint name: "judge" over every critic, "judge:<critics>" over a partial set.

    A Judge that saw only some critics must not be reused once a re-run gets the missing ones
    (their findings would be paid for and silently never shown), so its checkpoint names its inputs.
    """
    if not failed:
        return "judge"
    return "judge:" + "+".join(o.node for o in critics)


def _judged_finding(jf: Any, allowed: tuple[str, ...], by_id: Mapping[str, Finding]) -> Finding:
    """The Judge's finding, with sources and the pre-mortem category of the critic findings it merged."""
    finding: Finding = jf.finding(allowed)
    merged = [by_id[i] for i in jf.merged_ids if i in by_id]
    if not merged:
        return finding
    sources = tuple(
        dict.fromkeys(s for s in finding.source + tuple(x for m in merged for x in m.source) if s != "judge")
    )
    category = next((m.category for m in merged if m.category), None)
    return replace(finding, source=sources or finding.source, category=category)


# --- helpers ---------------------------------------------------------------------------------------


def _base_variables(proposal: Adr, citations: Sequence[Citation]) -> dict[str, Any]:
    text = proposal.text
    if len(text) > MAX_ADR_CHARS:
        text = text[:MAX_ADR_CHARS] + "\n[... truncated ...]"
    return {
        "adr_id": fold_whitespace(proposal.adr_id),
        "adr_title": fold_whitespace(proposal.title),
        "adr_status": proposal.raw_status or proposal.status,
        "language": proposal.language,
        "language_name": _LANGUAGE_NAMES.get(proposal.language, "English"),
        "adr_text": _as_data(text),
        "citations": [
            {
                "adr_id": c.adr_id,
                "title": fold_whitespace(c.title),
                "status": c.status,
                "relevance": c.relevance,
                "relevance_reason": fold_whitespace(_as_data(c.relevance_reason)),
                "superseded_by": c.superseded_by,
            }
            for c in citations
        ],
    }


def _meta_int(prompt: Prompt, key: str, default: int) -> int:
    """A count from the prompt's meta.yaml (part of the prompt's hash, so of the run key)."""
    try:
        return max(1, int(prompt.meta.raw.get(key, default)))
    except (TypeError, ValueError):
        return default


def _as_data(text: str) -> str:
    return _OUR_TAGS.sub("[tag removed]", text)


def _finding_for_judge(f: Finding) -> dict[str, Any]:
    d = {k: v for k, v in asdict(f).items() if v not in (None, "")}
    d["source"] = list(f.source)
    return d


def _usage_from(data: Any) -> Usage:
    if not isinstance(data, Mapping):
        return Usage()
    names = {f.name for f in fields(Usage)}
    try:
        return Usage(**{k: v for k, v in data.items() if k in names})
    except TypeError:
        return Usage()


def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:5]
        )
    return str(exc)


def _empty(
    status: Any,
    seed: int,
    selected: tuple[str, ...],
    errors: tuple[StageError, ...],
    usage_by_node: Mapping[str, Usage],
    *,
    skipped_reason: str,
) -> BlindSpotResult:
    return BlindSpotResult(
        status=status,
        findings=(),
        omitted_count=0,
        total_count_by_severity=count_by_severity(()),
        self_assessment="",
        selected_perspectives=selected,
        seed=seed,
        coverage_gaps=(),
        errors=errors,
        usage_by_node=usage_by_node,
        skipped_reason=skipped_reason,
    )
