"""The Recall pre-gate (seed 000, R9 Recaller): related past ADRs for a proposal, verified, advisory.

    query text ─> hybrid candidates (top N) ─┬─ llm:        model picks ≤5 ─> verify (core/citations) ─┐
                                             └─ extractive: best summary sentence per candidate ───────┴─> citations

Fail-safe-skip: every failure is fewer (or zero) citations with one `empty_reason` and a log event, but
an outage (InfrastructureError) is raised for a retry; never a rejection. The answer and usage go through
the StageMemo ("recall"): a re-run re-verifies the stored answer without a second call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from adr_review.config import RepoConfig
from adr_review.core.adr import Adr
from adr_review.core.citations import CandidateText, Verification, successor_of, verify_citations
from adr_review.core.evidence import EvidenceModel, cap, eligible, linked_paths
from adr_review.core.evidence_model import DEFAULT_EVIDENCE
from adr_review.core.extractive import pick_extractive
from adr_review.core.passages import passages_of
from adr_review.core.prompt_text import LANGUAGE_NAMES, our_tags
from adr_review.core.recall_query import recall_query, search_query
from adr_review.core.results import (
    INTERNAL_ERROR,
    Candidate,
    Citation,
    EmptyReason,
    RecallMode,
    RecallResult,
    Relevance,
    StageError,
    Usage,
)
from adr_review.core.text import fold_whitespace
from adr_review.pipeline.ports import (
    AdrIndex,
    InfrastructureError,
    LlmPort,
    PromptLibrary,
    StageMemo,
    no_memo,
)

log = logging.getLogger(__name__)

PROMPT_NAME = "recall-pre-gate"
STAGE = "recall"
# Our own delimiter tags in the prompt: ADR text must not be able to close them and talk to the model.
_OUR_TAGS = our_tags("proposal", "candidate_adrs")


@dataclass
class _Run:
    """What the stage has learnt so far; `result()` turns it into a RecallResult at any exit."""

    mode: RecallMode
    candidates: tuple[Candidate, ...] = ()
    usage: Usage = field(default_factory=Usage)
    dropped: dict[str, int] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    errors: list[StageError] = field(default_factory=list)

    def result(
        self, citations: Sequence[Citation] = (), empty_reason: EmptyReason | None = None
    ) -> RecallResult:
        return RecallResult(
            mode=self.mode,
            citations=tuple(citations),
            candidates=self.candidates,
            empty_reason=None if citations else empty_reason,
            dropped=dict(self.dropped),
            usage=self.usage,
            diagnostics=dict(self.diagnostics),
            errors=tuple(self.errors),
        )


def run_recall(
    proposal: Adr,
    index: AdrIndex,
    folder: Sequence[Adr],
    llm: LlmPort | None,
    *,
    config: RepoConfig,
    memo: StageMemo = no_memo,
    enabled: bool = True,
    prompts: PromptLibrary,
) -> RecallResult:
    """Recall up to `config.recall.max_citations` related ADRs. Raises only InfrastructureError.

    Mode: "disabled" when the kill switch is off (`enabled` from the env, or `recall.enabled`),
    "llm" with an LlmPort and `recall.llm`, else "extractive".
    """
    if not (enabled and config.recall.enabled):
        log.info("recall_pre_gate_skipped", extra={"reason": "disabled"})
        return _Run(mode="disabled").result(empty_reason="disabled")
    run = _Run(mode="llm" if llm is not None and config.recall.llm else "extractive")
    stage = "retrieval"
    try:
        query = recall_query(proposal)
        run.diagnostics["query_chars"] = len(query)
        if not query.strip():
            log.info("recall_pre_gate_skipped", extra={"reason": "empty_input", "path": proposal.path})
            return run.result(empty_reason="empty_input")

        reason = _retrieve(run, proposal, index, search_query(proposal), config)
        if reason is not None:
            return run.result(empty_reason=reason)

        stage = "llm"
        if run.mode == "llm":
            assert llm is not None
            return _llm_citations(run, proposal, query, folder, llm, config, memo, prompts)
        stage = "extractive"
        return _extractive_citations(run, proposal, query, folder, config)
    except Exception as exc:  # advisory: a bug here must cost the citations, not the review
        if isinstance(exc, InfrastructureError):
            raise  # the store or the index server is down: the run is retried, never recall without it
        event = "recall_pre_gate_embedding_failed" if stage == "retrieval" else "recall_pre_gate_failed"
        log.exception(event, extra={"stage": stage, "error": f"{type(exc).__name__}: {exc}"})
        why = "search_failed" if stage == "retrieval" else INTERNAL_ERROR  # the details: in the log only
        if stage == "llm" and run.mode == "llm":
            try:
                return _fallback(run, proposal, query, folder, config, why)
            except Exception:
                log.exception("recall_pre_gate_fallback_failed")
        run.errors.append(StageError("recall", why))
        return run.result(empty_reason="embedding_failed" if stage == "retrieval" else "llm_failed")


def _retrieve(
    run: _Run, proposal: Adr, index: AdrIndex, query: str, config: RepoConfig
) -> EmptyReason | None:
    found = index.search(query, top_n=config.retrieval.top_n, exclude_paths=frozenset({proposal.path}))
    run.candidates = tuple(found.candidates)
    run.diagnostics["retrieval"] = dict(found.diagnostics)
    run.diagnostics["retrieval_empty_reason"] = found.empty_reason
    if found.diagnostics.get("embedding_failed"):
        # Hybrid retrieval degrades to BM25 alone: keep going, but say so.
        log.warning(
            "recall_pre_gate_embedding_failed",
            extra={"degraded_to": "bm25", "candidates": len(found.candidates)},
        )
    if not run.candidates:
        reason: EmptyReason = found.empty_reason or "no_candidates"
        log.info("recall_pre_gate_no_candidates", extra={"reason": reason})
        return reason
    if not any(c.qualified for c in run.candidates):
        log.info(
            "recall_pre_gate_no_candidates",
            extra={"reason": "none_qualified", "candidates": len(run.candidates)},
        )
        return "none_qualified"
    return None


def _prompt_variables(
    proposal: Adr, query: str, candidates: Sequence[Candidate], folder: Sequence[Adr]
) -> dict[str, Any]:
    def clean(text: str) -> str:
        return _OUR_TAGS.sub("", text)

    return {
        "language_name": LANGUAGE_NAMES.get(proposal.language, proposal.language),
        "proposal": {
            "adr_id": clean(proposal.adr_id),
            "title": clean(fold_whitespace(proposal.title)),
            "status": proposal.status,
            "text": clean(query),
        },
        "candidates": [
            {
                "adr_id": clean(c.adr.adr_id),
                "title": clean(fold_whitespace(c.adr.title)),
                "status": c.adr.status,
                "superseded_by": successor_of(c.adr, folder),
                "summary": clean(fold_whitespace(c.adr.summary)) or "(no summary)",
            }
            for c in candidates
        ],
    }


def _llm_citations(
    run: _Run,
    proposal: Adr,
    query: str,
    folder: Sequence[Adr],
    llm: LlmPort,
    config: RepoConfig,
    memo: StageMemo,
    prompts: PromptLibrary,
) -> RecallResult:
    # the model's path only: an offline recall process does not import them
    from adr_review.pipeline.adr.recall_answer import answer_problems
    from adr_review.pipeline.structured import (
        StepFailed,
        StepOverrides,
        build_request,
        call_prompt,
        request_key,
    )
    from adr_review.prompts import PromptError

    try:
        prompt = prompts.prompt(PROMPT_NAME)
    except PromptError as exc:
        log.error("recall_pre_gate_prompt_failed", extra={"error": str(exc)})
        return _fallback(run, proposal, query, folder, config, f"prompt: {exc}")
    shown = _shown(run, proposal, config)
    if not shown:  # nothing earns a row: no model call, nothing to pay for
        return run.result(empty_reason="none_qualified")
    offered = [run.candidates[i] for i, _band in shown]
    # the model's label is capped by what the evidence earns; an unscored candidate caps nothing
    bands = [band if run.candidates[i].evidence is not None else None for i, band in shown]
    variables = _prompt_variables(proposal, query, offered, folder)
    overrides = StepOverrides.from_config(config.llm, PROMPT_NAME)
    request = build_request(prompt, variables, overrides)
    called = False

    def compute() -> dict[str, Any]:
        nonlocal called
        called = True
        answer = call_prompt(
            llm,
            prompt,
            variables,
            overrides,
            validate=answer_problems,
            request=request,
            item_valid=_citation_ok,
        )
        usage = answer.usage if answer.usage.model else replace(answer.usage, model=answer.request.model)
        return {
            "answer": answer.data,
            "usage": asdict(usage),
            "prompt": prompt.name,
            "prompt_hash": prompt.files_hash(),
            "model": answer.request.model,
            "temperature": answer.request.temperature,
            "malformed": answer.dropped_items,
        }

    try:
        stored = memo(STAGE, compute, request_key(request))
    except StepFailed as exc:
        run.usage = exc.usage
        log.warning("recall_pre_gate_llm_failed", extra={"kind": exc.kind, "error": exc.message})
        run.diagnostics["llm_error"] = exc.kind
        return _fallback(run, proposal, query, folder, config, f"{exc.kind}: {exc.message}")
    run.usage = Usage.stored(stored.get("usage"))
    run.diagnostics.update(
        prompt=stored.get("prompt", PROMPT_NAME),
        model=stored.get("model"),
        temperature=stored.get("temperature"),  # the configured value, sent or not
        replayed=not called,
    )
    answer: Any = stored.get("answer")
    problems = answer_problems(answer)
    if problems:  # a stored answer from an older shape: treat like a bad answer, do not raise
        return _fallback(run, proposal, query, folder, config, f"stored answer: {'; '.join(problems)}")
    malformed = int(stored.get("malformed") or 0)
    if malformed and not answer["citations"]:  # every item unusable: the answer as a whole is
        return _fallback(
            run, proposal, query, folder, config, f"schema: all {malformed} citation(s) malformed"
        )
    verification = _verify(run, proposal, answer["citations"], config, offered)
    if malformed:
        run.dropped["malformed"] = malformed
    citations = _citations(offered, verification, folder, ceilings=bands)
    if citations:
        return run.result(citations)
    return run.result(
        empty_reason="all_dropped_by_verification" if verification.proposed else "none_relevant"
    )


def _verify(
    run: _Run, proposal: Adr, proposed: Sequence[Any], config: RepoConfig, candidates: Sequence[Candidate]
) -> Verification:
    verification = verify_citations(
        proposed,
        [CandidateText.of(c.adr) for c in candidates],
        passages_of(proposal),  # the proposal as a reader sees it (the query is cut from it)
        limit=config.recall.max_citations,
    )
    run.dropped = dict(verification.dropped)
    run.diagnostics["llm_count"] = verification.proposed
    run.diagnostics["relevance_normalized"] = verification.relevance_normalized
    run.diagnostics["relevance_capped"] = verification.relevance_capped
    log.info(
        "recall_pre_gate_citations_filtered",
        extra={
            "mode": run.mode,
            "llm_count": verification.proposed,
            "kept": len(verification.kept),
            "dropped": verification.dropped_total,
            "dropped_by_reason": dict(verification.dropped),
            "relevance_normalized": verification.relevance_normalized,
            "relevance_capped": verification.relevance_capped,
        },
    )
    return verification


def _citation_ok(item: Any) -> bool:
    """One citation of the model's answer has the shape code can verify (or repair)."""
    from adr_review.pipeline.adr.recall_answer import answer_problems

    return not answer_problems({"citations": [item]})


def _fallback(
    run: _Run, proposal: Adr, query: str, folder: Sequence[Adr], config: RepoConfig, why: str
) -> RecallResult:
    """The model gave nothing usable: recall still cites, extractively, and says why (the footer shows
    the mode that really ran)."""
    run.errors.append(StageError("recall", why))
    run.mode = "extractive"
    run.diagnostics.update(fallback_from="llm", fallback_reason=why[:300])
    log.warning("recall_pre_gate_fell_back_to_extractive", extra={"reason": why[:300]})
    return _extractive_citations(run, proposal, query, folder, config)


def _extractive_citations(
    run: _Run, proposal: Adr, query: str, folder: Sequence[Adr], config: RepoConfig
) -> RecallResult:
    picks = pick_extractive(
        run.candidates,
        query,
        passages_of(proposal),
        evidence=evidence_model(config),
        limit=config.recall.max_citations,
        linked=linked_paths(proposal, run.candidates),
    )
    proposed = [
        {
            "adr_id": run.candidates[p.candidate_index].adr.adr_id,
            "relevance": p.relevance,
            "relevance_reason": p.reason,
        }
        for p in picks
    ]
    # Verbatim by construction; verifying anyway keeps one rule for both modes (and counts a bug).
    verification = _verify(run, proposal, proposed, config, run.candidates)
    citations = _citations(run.candidates, verification, folder)
    if citations:
        return run.result(citations)
    return run.result(empty_reason="all_dropped_by_verification" if proposed else "none_qualified")


def _shown(run: _Run, proposal: Adr, config: RepoConfig) -> list[tuple[int, Relevance]]:
    """The candidates (index, label) whose evidence earns a row: what the model may cite."""
    return eligible(run.candidates, evidence_model(config), linked_paths(proposal, run.candidates))


def evidence_model(config: RepoConfig) -> EvidenceModel:
    """The shipped calibrated model with the repository's thresholds, where it sets any."""
    rc = config.recall
    model = DEFAULT_EVIDENCE
    floor = model.floor if rc.evidence_floor is None else rc.evidence_floor
    high = model.high if rc.evidence_high is None else rc.evidence_high
    med = model.med if rc.evidence_med is None else rc.evidence_med
    return replace(model, floor=floor, high=max(high, floor), med=min(max(med, floor), max(high, floor)))


def _citations(
    candidates: Sequence[Candidate],
    verification: Verification,
    folder: Sequence[Adr],
    ceilings: Sequence[Relevance | None] | None = None,
) -> list[Citation]:
    """The kept citations; with `ceilings` (the label each candidate's evidence earns) a model's
    label is never above its candidate's evidence."""
    out = []
    for v in verification.kept:
        adr = candidates[v.candidate_index].adr
        out.append(
            Citation(
                adr_id=adr.adr_id,
                path=adr.path,
                title=adr.title,
                status=adr.status,
                relevance=cap(v.relevance, ceilings[v.candidate_index] if ceilings else None),
                relevance_reason=v.relevance_reason,
                superseded_by=successor_of(adr, folder),
                quoted_from=v.quoted_from,
            )
        )
    return out
