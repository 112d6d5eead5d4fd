"""The blind-spot DAG (seed 002, ADR-0071): critics in parallel, then a Judge, all advisory.

    devils_advocate ─┐  verify                          verify quotes, exclusions
    premortem ───────┼─ quotes ─> judge (verified only) ─> + code guards (dedupe, own risks, cap) ─> result
    adjacent_domain ─┘ (optional)

Every finding is checked (app/adr_review/core/findings.py): its quote must be one passage of the ADR as a reader
sees it and every ADR it names one it was shown; one that fails is listed apart as unverified, never
among the findings. A Judge's exclusion holds only when it names a passage of a section that can cover
a risk (app/adr_review/core/finding_checks.py) and one independent check call confirms it is about the
finding's subject (app/adr_review/pipeline/adr/blindspot_cover.py; a passage sharing too few terms is rejected
with no call), or the finding is put back; the critic
findings the Judge neither kept nor claimed as covered are counted as dropped by it, and a finding it
merged from no critic finding is its own. The critics and the Judge write in `language` (the repo
setting, else the ADR's own).

Degradation, never failure: a critic that fails is left out and recorded; if every critic fails the
stage is skipped; if the Judge fails the critics' findings are shown un-judged after the code-level
dedupe. run_blindspots never raises for a model, prompt or checkpoint problem: every one becomes an
entry in `errors` with its node. Each node goes through the StageMemo, so a re-run after a crash reuses
stored answers (and still accounts for their usage) instead of paying for them again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Literal

from adr_review.config import BlindSpotConfig
from adr_review.core.adr import Adr
from adr_review.core.finding_checks import (
    code_exclusions,
    dropped_by_judge,
    judge_exclusions,
    known_adr_ids,
    settle_unsure,
    verify_finding,
    verify_findings,
)
from adr_review.core.findings import (
    count_by_severity,
    dedupe_findings,
    exclude_covered,
    own_risk_items,
)
from adr_review.core.noise_budget import budget_findings, cap_findings
from adr_review.core.passages import is_markdown_path, passages_of
from adr_review.core.perspectives import (
    ConstitutionError,
    Perspective,
    draw_perspectives,
    perspective_weights,
)
from adr_review.core.results import BlindSpotResult, Citation, Exclusion, Finding, StageError, Usage
from adr_review.pipeline.adr.blindspot_cover import NODE as COVER_CHECK
from adr_review.pipeline.adr.blindspot_cover import run_cover_checks
from adr_review.pipeline.adr.blindspot_nodes import (
    CRITIC_PROMPTS,
    JUDGE_PROMPT,
    OWN_RISK_SECTIONS,
    PERSPECTIVES_PER_RUN,
    NodeContext,
    adr_cut,
    base_variables,
    empty_result,
    judged_finding,
    meta_int,
    run_critic,
    run_judge,
)
from adr_review.pipeline.ports import LlmPort, PromptLibrary, StageMemo, no_memo
from adr_review.pipeline.structured import StepOverrides
from adr_review.prompts import PromptError

log = logging.getLogger(__name__)


def run_blindspots(
    proposal: Adr,
    citations: Sequence[Citation],
    llm: LlmPort,
    *,
    config: BlindSpotConfig,
    seed: int,
    memo: StageMemo = no_memo,
    prompts: PromptLibrary,
    overrides: Mapping[str, StepOverrides] | None = None,
    language: str | None = None,
) -> BlindSpotResult:
    """Run the critics concurrently, then the Judge; see the module docstring for the failure rules.

    overrides: per prompt name (e.g. from repo config `llm.prompts`), replacing meta.yaml model,
    temperature or max_tokens. language: what the models write in (en | ja; None: the ADR's language).
    """
    if not config.enabled:
        return empty_result("disabled", seed, (), (), {}, skipped_reason="disabled")

    library = prompts
    nodes = ["devils_advocate", "premortem"] + (["adjacent_domain"] if config.adjacent_domain else [])
    errors: list[StageError] = []
    perspectives: tuple[Perspective, ...] = ()
    weights: dict[str, int] = {}
    try:
        k = meta_int(library.prompt(CRITIC_PROMPTS["devils_advocate"]), "perspectives", PERSPECTIVES_PER_RUN)
    except PromptError:
        k = PERSPECTIVES_PER_RUN  # the critic reports its own prompt error
    try:
        constitution = library.constitution()
        # Weighted by the ADR's own words, so the draw favours the perspectives this decision touches;
        # the weights are recorded with the seed.
        weights = perspective_weights(constitution, proposal.text)
        perspectives = draw_perspectives(constitution, seed, k, weights)
    except ConstitutionError as exc:
        errors.append(StageError("devils_advocate", f"constitution: {exc}"))
        nodes.remove("devils_advocate")
        weights = {}
    selected = tuple(p.id for p in perspectives)
    log.info(
        "constitution_perspectives_selected",
        extra={"seed": seed, "perspectives": list(selected), "weights": weights},
    )

    base = base_variables(proposal, citations, language)
    ctx = NodeContext(llm=llm, memo=memo, prompts=library, overrides=overrides or {})
    with ThreadPoolExecutor(max_workers=max(1, len(nodes)), thread_name_prefix="blindspot") as pool:
        futures = [pool.submit(run_critic, ctx, node, base, perspectives, base["language"]) for node in nodes]
        outcomes = [f.result() for f in futures]
    passages = passages_of(proposal)
    known = known_adr_ids(proposal.adr_id, passages, (c.adr_id for c in citations))
    outcomes = [
        replace(o, findings=tuple(verify_finding(f, passages, known) for f in o.findings)) for o in outcomes
    ]

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
        return empty_result(
            "skipped",
            seed,
            selected,
            tuple(errors),
            usage_by_node,
            skipped_reason="all_critics_failed",
            weights=weights,
        )

    critic_findings = [f for o in succeeded for f in o.findings if f.unverified is None]
    unverified = [f for o in succeeded for f in o.findings if f.unverified is not None]
    by_id = {
        fid: f for o in succeeded for fid, f in zip(o.ids, o.findings, strict=True) if f.unverified is None
    }
    judged = run_judge(
        ctx,
        base,
        proposal,
        succeeded,
        failed=[e.node for e in errors if e.node in CRITIC_PROMPTS],
    )
    if judged.usage.calls or judged.usage.input_tokens:
        usage_by_node["judge"] = judged.usage
    dropped: dict[str, int] = {}
    exclusions: list[Exclusion] = []
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
        answer = judged.answer
        findings, judge_unverified = verify_findings(
            [judged_finding(jf, allowed, by_id) for jf in answer.findings], passages, known
        )
        unverified.extend(judge_unverified)
        merged_ids = [i for jf in answer.findings for i in jf.merged_ids]
        claimed = [(x.id, x.quote) for x in answer.excluded]
        claims = judge_exclusions(claimed, by_id, proposal, shown_ids=merged_ids)
        checks = run_cover_checks(ctx, base, claims.unsure)  # no unsure claim: no call
        if checks.usage.calls or checks.usage.input_tokens:
            usage_by_node[COVER_CHECK] = checks.usage
        errors.extend(checks.errors)
        claims = settle_unsure(claims, checks.confirmed)
        findings = [*findings, *claims.restored]
        exclusions.extend(claims.exclusions)
        self_assessment = answer.self_assessment
        rejected = claims.rejected
        dropped["judge_excluded_as_covered"] = len(claims.exclusions)
        dropped["judge_exclusion_unverified"] = rejected.get("not_verbatim", 0) + rejected.get(
            "unknown_id", 0
        )
        dropped["judge_exclusion_not_covering"] = rejected.get("not_covering_section", 0)
        dropped["judge_exclusion_off_subject"] = rejected.get("off_subject", 0)
        dropped["judge_excluded_confirmed"] = claims.confirmed  # by the independent check
        dropped["judge_exclusion_not_confirmed"] = rejected.get("not_confirmed", 0)
        dropped["judge_dropped"] = len(dropped_by_judge(by_id, merged_ids, (fid for fid, _ in claimed)))

    findings, merged = dedupe_findings(findings)
    items = own_risk_items(proposal.sections, OWN_RISK_SECTIONS, markdown=is_markdown_path(proposal.path))
    findings, covered = exclude_covered(findings, items)
    exclusions.extend(code_exclusions(covered, proposal))
    dropped["merged_duplicates"] = merged
    dropped["covered_by_adr"] = len(covered)
    dropped["unverified"] = len(unverified)
    unverified_shown, _ = cap_findings(dedupe_findings(unverified)[0], config.max_findings)
    shown, low_confidence, omitted = budget_findings(findings, config.max_findings, config.min_confidence)
    return BlindSpotResult(
        status=status,
        findings=shown,
        omitted_count=omitted,
        total_count_by_severity=count_by_severity(findings),
        self_assessment=self_assessment,
        selected_perspectives=selected,
        seed=seed,
        perspective_weights=weights,
        coverage_gaps=gaps,
        errors=tuple(errors),
        usage_by_node=usage_by_node,
        dropped=dropped,
        unverified=unverified_shown,
        exclusions=tuple(exclusions),
        low_confidence_count=low_confidence,
        raised_count=len(critic_findings),
        adr_cut=adr_cut(proposal),
    )


__all__ = ["CRITIC_PROMPTS", "JUDGE_PROMPT", "run_blindspots"]
