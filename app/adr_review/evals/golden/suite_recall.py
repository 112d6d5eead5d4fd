"""The recall-pre-gate suite: a case's proposal and candidates through the production recall stage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adr_review.config import RepoConfig
from adr_review.core.adr import Adr, canonical_id_key
from adr_review.core.citations import NOT_A_CANDIDATE, NOT_VERBATIM, TOO_SHORT
from adr_review.core.results import Candidate, RecallResult, RetrievalResult, Usage
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
from adr_review.pipeline.adr.recall import PROMPT_NAME, run_recall
from adr_review.pipeline.ports import LlmRequest
from adr_review.prompts import Prompt, PromptFiles


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
    # The qrels: every earlier ADR the proposal really references (file names or ids, from the corpus'
    # qrels.jsonl), for precision@k and recall@k; none for a proposal that should cite nothing.
    relevant: list[str] = Field(default_factory=list)


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


def _id_matches(want: str, adr_id: str, path: str) -> bool:
    w = want.strip()
    return canonical_id_key(w) == canonical_id_key(adr_id) or w.rsplit("/", 1)[-1] == path.rsplit("/", 1)[-1]


class RecallSuite:
    """recall-pre-gate, run through the production stage (app/adr_review/pipeline/recall.run_recall).

    The index port serves the case's candidates, so the prompt sees exactly what production would
    render for them, and the answer is verified by the production verification (app/adr_review/core/citations).
    """

    prompt_name = PROMPT_NAME
    reads: tuple[str, ...] = (f"{LIBRARY_DIR}/*",)

    def _run(self, case: GoldenCase, prompt: Prompt, llm: StepLlm) -> RecallResult:
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
        return run_recall(
            proposal,
            _GoldenIndex(candidates),
            [proposal, *(c.adr for c in candidates)],
            llm,
            config=RepoConfig(),
            prompts=PromptFiles(prompt.folder.parent),
        )

    def request(self, case: GoldenCase, prompt: Prompt) -> LlmRequest:
        llm = StepLlm(self.prompt_name, None)
        result = self._run(case, prompt, llm)
        if len(llm.requests) != 1:
            errors = "; ".join(e.message for e in result.errors) or str(result.empty_reason)
            raise GoldenError(f"recall did not reach the model ({errors})")
        return llm.requests[0]

    def evaluate(self, case: GoldenCase, prompt: Prompt, answer: AnswerFn) -> Evaluation:
        expect = RecallExpect.model_validate(case.expect)
        llm = StepLlm(self.prompt_name, answer)
        result = self._run(case, prompt, llm)
        usage = result.usage if result.usage.calls else (llm.response.usage if llm.response else Usage())
        llm_errors = [e for e in result.errors if e.node == "recall"]
        if result.empty_reason == "llm_failed" and llm_errors:
            return step_failure(llm_errors[0].message, usage)
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
        s.add("reasons_dropped_too_short", dropped.pop(TOO_SHORT, 0))
        s.add("citations_dropped_other", sum(dropped.values()))
        for c in kept:
            s.add(f"relevance_{c.relevance}")
            s.add("citations_relevant", float(any(_id_matches(r, c.adr_id, c.path) for r in expect.relevant)))
        relevant_candidates = [
            c
            for c in result.candidates
            if any(_id_matches(r, c.adr.adr_id, c.adr.path) for r in expect.relevant)
        ]
        s.add("relevant_candidates", len(relevant_candidates))
        s.add(
            "relevant_candidates_cited",
            sum(1 for c in relevant_candidates if any(k.path == c.adr.path for k in kept)),
        )
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
            "reasons_dropped_too_short": t.get("reasons_dropped_too_short", 0.0),
            # Micro-averaged over the kept citations / over the qrels-relevant candidates shown.
            "precision_at_k": ratio(t.get("citations_relevant", 0.0), t.get("citations_kept", 0.0)),
            "recall_at_k": ratio(t.get("relevant_candidates_cited", 0.0), t.get("relevant_candidates", 0.0)),
            **{
                f"relevance_{r}_share": ratio(t.get(f"relevance_{r}", 0.0), t.get("citations_kept", 0.0), 0.0)
                for r in ("high", "med", "low")
            },
        }

    def default_thresholds(self) -> Mapping[str, float]:
        return {
            "max_ids_dropped_not_in_candidates": 0,
            "kept_share": 0.8,
            "expected_citations_found": 0.75,
            "max_forbidden_citations_present": 0,
            "precision_at_k": 0.6,
        }
