"""Hybrid ranking: fuse dense and lexical scores, qualify, diversify, and explain an empty result.

Pure: the inputs are per-document scores that the index computed, the output is ranked Candidates
and at most one empty reason. Seed 001's lessons are built in:

- **Fusion by normalised scores**, not reciprocal ranks: fused = w_bm25 * bm25/top_bm25
  + w_dense * min-max(cosine) + w_title * title coverage. Rank fusion throws away how far ahead a
  strong lexical hit is, and lets a weak channel (an English-only model on Japanese text) drag
  good lexical results down.
- **Qualification is an OR-gate**: a candidate is qualified when its cosine passes a threshold OR
  its BM25 score relative to the best hit does. Neither channel can veto the other. Qualified
  candidates come first (in MMR order); unqualified ones only fill the remaining slots, marked.
- **Cross-language slots** (off unless the multilingual channel scored the query): the best
  documents in another language than the query whose cross-language score (a second, multilingual
  vector set: `DocScores.cross_language_score`) passes `cross_language_gate` are placed within the
  first `cross_language_rank` places, at most `cross_language_slots` of them. BM25, title coverage
  and the n-gram cosine are near zero across scripts, so fused scores alone would never lift them;
  a slot is a separate way in (the OR-gate again), and it moves same-language candidates down by at
  most that many places instead of re-weighting them. A second, lower gate
  (`cross_language_fill_gate`, off unless set) lets a weaker cross-language score take the place of
  an unqualified fill-in only: a candidate with some evidence against one with none, never against a
  qualified same-language candidate. The fused score never sees the second vector set, so a query
  with no other-language document in scope ranks exactly as without it.
- **MMR** re-orders qualified candidates for diversity when a similarity function is given.
- **One discrete empty reason**: the caller's (`disabled`, `empty_input`, `empty_index`) or ours
  (`embedding_failed`, `no_candidates`, `none_qualified`).

When the embedding failed (dense is None everywhere) the lexical weights are renormalised, so
retrieval continues lexical-only; the caller reports `embedding_failed` in the diagnostics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import compress, islice
from typing import Any

from adr_review.core.adr import Adr
from adr_review.core.evidence import Background, EvidenceModel, assess
from adr_review.core.results import Candidate, EmptyReason, RetrievalResult

Similarity = Callable[[Adr, Adr], float]


@dataclass(frozen=True)
class FusionParams:
    """Knobs; defaults (chosen by measurement, see docs/retrieval.md) live in adr_review.config.RetrievalConfig."""

    dense_weight: float = 0.2
    title_weight: float = 0.25  # bm25 weight = 1 - dense_weight - title_weight
    qualify_cosine: float = 0.25
    qualify_bm25_rel: float = 0.6
    mmr_lambda: float = 1.0  # 1.0 = pure relevance order, lower = more diversity
    top_n: int = 20
    cross_language_slots: int = 0  # 0: off (see the module doc)
    cross_language_rank: int = 5  # the slots lie within the first this-many places
    cross_language_gate: float = 0.0  # minimum cross-language score for a slot
    cross_language_fill_gate: float | None = None  # a lower one, for a fill-in's place only (None: none)
    evidence: EvidenceModel | None = None  # calibrated evidence of each candidate (None: not scored)

    def __post_init__(self) -> None:
        if self.dense_weight < 0 or self.title_weight < 0 or self.dense_weight + self.title_weight > 1:
            raise ValueError("fusion weights must be >= 0 and dense_weight + title_weight <= 1")
        if not 0.0 <= self.mmr_lambda <= 1.0:
            raise ValueError("mmr_lambda must be within [0, 1]")
        if self.top_n < 1:
            raise ValueError("top_n must be >= 1")
        if not 0 <= self.cross_language_slots <= self.cross_language_rank or self.cross_language_rank < 1:
            raise ValueError(
                "need 0 <= cross_language_slots <= cross_language_rank and cross_language_rank >= 1"
            )

    @property
    def bm25_weight(self) -> float:
        return 1.0 - self.dense_weight - self.title_weight


@dataclass(frozen=True)
class DocScores:
    """What the index measured for one document and one query."""

    adr: Adr
    dense: float | None  # cosine of the best chunk; None when no dense vector was available
    bm25: float
    title: float = 0.0  # title coverage in [0, 1]
    cross_language: bool = False  # the document is in another language than the query
    cross_language_score: float | None = None  # the multilingual channel's score; None: not scored
    cross_language_evidence: str | None = None  # the passage of the ADR that score rests on, if known
    coverage: float = 0.0  # the evidence's lexical features (app/adr_review/core/lexical.py LexicalScores)
    rare_idf: float = 0.0
    rare_count: int = 0


@dataclass(frozen=True)
class CrossLanguageMatch:
    """What a cross-language scorer measured for one query: a score per other-language document, and
    for some of them the passage the score rests on (verbatim, to show why)."""

    scores: Mapping[str, float] = field(default_factory=dict)
    evidence: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ranking:
    candidates: tuple[Candidate, ...]
    empty_reason: EmptyReason | None
    stats: Mapping[str, Any] = field(default_factory=dict)


def fuse(scores: Sequence[DocScores], params: FusionParams, *, dense_failed: bool = False) -> list[Candidate]:
    """Every document with its normalised and fused scores, best first; not yet qualified or cut."""
    if not scores:
        return []
    top_bm25 = max(s.bm25 for s in scores)
    dense_values = [s.dense for s in scores if s.dense is not None]
    use_dense = bool(dense_values) and not dense_failed and params.dense_weight > 0
    lo = min(dense_values) if dense_values else 0.0
    hi = max(dense_values) if dense_values else 0.0
    w_b, w_d, w_t = params.bm25_weight, params.dense_weight, params.title_weight
    if not use_dense:
        total = w_b + w_t
        w_b, w_d, w_t = (w_b / total, 0.0, w_t / total) if total > 0 else (1.0, 0.0, 0.0)
    out = []
    for s in scores:
        bm25_rel = max(s.bm25, 0.0) / top_bm25 if top_bm25 > 0 else 0.0  # Okapi IDF can go negative
        dense_norm = 0.0
        if use_dense and s.dense is not None:
            dense_norm = (s.dense - lo) / (hi - lo) if hi > lo else 1.0
        fused = w_b * bm25_rel + w_d * dense_norm + w_t * s.title
        out.append(
            Candidate(
                adr=s.adr,
                dense=None if dense_failed else s.dense,
                bm25=s.bm25,
                bm25_rel=bm25_rel,
                fused=fused,
                qualified=False,
                why="",
                title_match=s.title,
                cross_language=s.cross_language,
                cross_language_evidence=s.cross_language_evidence,
                coverage=s.coverage,
                rare_idf=s.rare_idf,
                rare_count=s.rare_count,
            )
        )
    out.sort(key=lambda c: (-c.fused, c.adr.path))
    return out


def _gates(candidate: Candidate, params: FusionParams) -> tuple[bool, bool]:
    """(dense passes, BM25 passes): the OR-gate's two halves."""
    dense_ok = candidate.dense is not None and candidate.dense >= params.qualify_cosine
    bm25_ok = candidate.bm25 > 0 and candidate.bm25_rel >= params.qualify_bm25_rel
    return dense_ok, bm25_ok


def qualify(candidate: Candidate, params: FusionParams) -> Candidate:
    """The OR-gate, with a reason a reader can check against the printed scores."""
    dense_ok, bm25_ok = _gates(candidate, params)
    dense_txt = (
        "no dense score"
        if candidate.dense is None
        else f"cosine {candidate.dense:.3f} {'>=' if dense_ok else '<'} {params.qualify_cosine:g}"
    )
    bm25_txt = f"bm25 {candidate.bm25_rel:.2f} of top {'>=' if bm25_ok else '<'} {params.qualify_bm25_rel:g}"
    if dense_ok and bm25_ok:
        why = f"qualified: {dense_txt} and {bm25_txt}"
    elif dense_ok:
        why = f"qualified: {dense_txt}"
    elif bm25_ok:
        why = f"qualified: {bm25_txt}"
    else:
        why = f"fill-in: {dense_txt}, {bm25_txt}"
    return _replace(candidate, qualified=dense_ok or bm25_ok, why=why)


def mmr(candidates: Sequence[Candidate], similarity: Similarity, lam: float, k: int) -> list[Candidate]:
    """Maximal marginal relevance over fused scores (relative to the best), greedy, first k."""
    pool = list(candidates)
    if lam >= 1.0 or len(pool) <= 1:
        return pool[:k]
    top = max(c.fused for c in pool) or 1.0
    chosen: list[Candidate] = []
    max_sim = [0.0] * len(pool)
    remaining = list(range(len(pool)))
    while remaining and len(chosen) < k:
        best = max(remaining, key=lambda i: (lam * pool[i].fused / top - (1 - lam) * max_sim[i], -i))
        remaining.remove(best)
        chosen.append(pool[best])
        for i in remaining:
            max_sim[i] = max(max_sim[i], similarity(pool[i].adr, pool[best].adr))
    return chosen


def rank(
    scores: Sequence[DocScores],
    params: FusionParams,
    *,
    dense_failed: bool = False,
    similarity: Similarity | None = None,
    top_n: int | None = None,
) -> Ranking:
    """Fused, qualified, diversified top-N, and the empty reason when nothing comes back qualified.

    Documents with no signal at all (no BM25 term, no title term, no dense score) are dropped.
    `none_qualified` still returns the unqualified fill-ins (marked): recall is advisory, the
    caller decides whether to show them.
    """
    n = top_n or params.top_n
    fused = fuse(scores, params, dense_failed=dense_failed)
    live = [c for c in fused if c.bm25 > 0 or c.title_match > 0 or (c.dense is not None and c.dense > 0)]
    stats: dict[str, Any] = {"scored": len(scores), "with_signal": len(live)}
    if not live:
        reason: EmptyReason = "embedding_failed" if dense_failed else "no_candidates"
        return Ranking((), reason, stats)
    # The gate for every candidate, the reason (a new Candidate) only for those that can be returned:
    # the first 2n qualified (MMR's head) and the first n fill-ins.
    passed = [any(_gates(c, params)) for c in live]
    n_qualified = sum(passed)
    qualified = [qualify(c, params) for c in islice(compress(live, passed), max(n * 2, n))]
    fill = [qualify(c, params) for c in islice(compress(live, [not ok for ok in passed]), n)]
    if similarity is not None and params.mmr_lambda < 1.0 and qualified:
        ordered = mmr(qualified, similarity, params.mmr_lambda, n)
    else:
        ordered = qualified[:n]
    ordered += fill[: n - len(ordered)]
    xl_scores = {s.adr.path: s.cross_language_score for s in scores if s.cross_language_score is not None}
    if params.cross_language_slots > 0 and xl_scores:
        ordered = _cross_language_slots(ordered, fused, xl_scores, params)[:n]
        stats["cross_language_slotted"] = sum(1 for c in ordered if c.why.endswith(_SLOT_NOTE))
    stats.update(qualified=n_qualified, fill_ins=sum(1 for c in ordered if not c.qualified))
    out = tuple(ordered)
    background = Background.of([s.bm25 for s in scores], [None if dense_failed else s.dense for s in scores])
    stats["background"] = asdict(background)  # what a caller with its own evidence model re-assesses with
    if params.evidence is not None:
        slots = frozenset(c.adr.path for c in out if c.why.endswith(_SLOT_NOTE))
        out = assess(out, background, params.evidence, unscored=slots)
    return Ranking(out, None if n_qualified else "none_qualified", stats)


_SLOT_NOTE = " (cross-language slot)"


def _cross_language_slots(
    ordered: list[Candidate],
    fused: Sequence[Candidate],
    xl_scores: Mapping[str, float],
    params: FusionParams,
) -> list[Candidate]:
    """Make room within the first `cross_language_rank` places for the best other-language documents
    (up to `cross_language_slots`, counting those already there; a slot qualifies its candidate: that
    score is the way in). Two ways in:

    - a score that passes `cross_language_gate`: the candidate enters at the head's end and the
      same-language candidates it passes move down in order (none is dropped before the cut);
    - a score that passes only the lower `cross_language_fill_gate`: the candidate may take the place
      of an unqualified fill-in (which passed neither relevance gate) and of nothing else.

    Those already in the head keep their place."""
    k = params.cross_language_rank

    def eligible(gate: float) -> list[tuple[float, Candidate]]:
        return sorted(
            (
                (xl, c)
                for c in fused
                if c.cross_language and (xl := xl_scores.get(c.adr.path)) is not None and xl >= gate
            ),
            key=lambda t: (-t[0], t[1].adr.path),
        )

    def slotted(c: Candidate, gate: float, note: str = "") -> Candidate:
        lexical = qualify(c, params).why.removeprefix("qualified: ").removeprefix("fill-in: ")
        passed = f"cross-language score {xl_scores[c.adr.path]:.3f} >= {gate:g}{note}"
        return _replace(c, qualified=True, why=f"qualified: {passed} ({lexical}){_SLOT_NOTE}")

    strong = [c for _xl, c in eligible(params.cross_language_gate)[: params.cross_language_slots]]
    chosen = {c.adr.path for c in strong}
    position = {c.adr.path: i for i, c in enumerate(ordered)}
    gate = params.cross_language_gate
    # one already in the head keeps its place; a fill-in there holds its slot by that score
    in_head = [c if c.qualified else slotted(c, gate) for c in ordered[:k] if c.adr.path in chosen]
    entering = [slotted(c, gate) for c in strong if c.adr.path not in {h.adr.path for h in in_head}]
    others = [c for c in ordered if c.adr.path not in chosen]
    n_other = k - len(in_head) - len(entering)
    if all(c.cross_language for c in fused):
        # no document in the query's language: the fused ranking has only lexical crumbs of the
        # other language to go on, and the channel ranks better (MRR, docs/benchmarks.md), so its
        # picks lead, best first, instead of waiting at the head's end for a same-language head
        picked = {c.adr.path: c for c in in_head + entering}
        head = [picked[c.adr.path] for c in strong] + others[:n_other]
    else:
        head = sorted(in_head + others[:n_other], key=lambda c: position[c.adr.path]) + entering
    fill_gate = params.cross_language_fill_gate
    budget = params.cross_language_slots - len(strong)
    if fill_gate is not None and fill_gate < gate and budget > 0:
        head = _into_fill_in_places(head, eligible(fill_gate), budget, lambda c: slotted(c, fill_gate, _FILL))
    taken = {c.adr.path for c in head}
    return head + [c for c in ordered if c.adr.path not in taken]


_FILL = ", in a fill-in's place"


def _into_fill_in_places(
    head: list[Candidate],
    eligible: Sequence[tuple[float, Candidate]],
    budget: int,
    slotted: Callable[[Candidate], Candidate],
) -> list[Candidate]:
    """The fill-gate's way in: up to `budget` other-language candidates, best first, each holding the
    fill-in place it already has or taking the lowest-ranked fill-in's that is not one of them."""
    in_head = {c.adr.path: c for c in head}
    weak = [c for _xl, c in eligible if c.adr.path not in in_head or not in_head[c.adr.path].qualified][
        :budget
    ]  # a slotted candidate is qualified: it already holds its place
    weak_paths = {c.adr.path for c in weak}
    replaceable = [c for c in head if not c.qualified and c.adr.path not in weak_paths]
    entering = [c for c in weak if c.adr.path not in in_head][: len(replaceable)]
    replaced = {
        c.adr.path: e for c, e in zip(replaceable[len(replaceable) - len(entering) :], entering, strict=True)
    }
    out = []
    for c in head:
        if c.adr.path in replaced:
            out.append(slotted(replaced[c.adr.path]))
        elif c.adr.path in weak_paths:
            out.append(slotted(c))
        else:
            out.append(c)
    return out


def empty_result(reason: EmptyReason, diagnostics: Mapping[str, Any] | None = None) -> RetrievalResult:
    """A RetrievalResult with no candidates and one reason (disabled / empty_input / empty_index / ...)."""
    return RetrievalResult(candidates=(), empty_reason=reason, diagnostics=dict(diagnostics or {}))


def _replace(candidate: Candidate, **changes: Any) -> Candidate:
    from dataclasses import replace

    return replace(candidate, **changes)
