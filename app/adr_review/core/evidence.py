"""Calibrated evidence: how likely a retrieved ADR is one the proposal builds on. Pure.

Ranking answers "which ADR is best"; the comment must also answer "is the best one related at all".
Fused scores are relative to the best hit (bm25 / top, min-max cosine), so the fifth row of an
unrelated folder scored like the fifth row of a related one. The evidence is a probability instead:
a logistic model over features that mean the same thing in every folder (the feature list below),
fitted on the shared corpora leave-one-corpus-out (benchmarks/calibrate_evidence.py, figures in
docs/benchmarks.md), with a floor below which a candidate is not shown and the bands of the label.

- the BM25 score and the best-chunk cosine as z-scores against the pool's own distribution for this
  query (the background: how far above an arbitrary ADR of this folder it stands);
- lexical overlap normalised by the query: the share of the query's IDF mass the ADR contains, the
  IDF mass of the rare terms they share, and how many terms only that ADR shares (app/adr_review/core/lexical.py;
  function words of either language carry no weight);
- title coverage, the pool's size (a top hit among 200 ADRs is less telling than among 10), the
  fused score and the rank (how the ranking itself placed it).

An explicit link (the proposal names the ADR's id or file, or supersedes it) is evidence the corpora
cannot measure (their references are masked): such a candidate is shown, labelled high.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from adr_review.core.adr import Adr, AdrLink
from adr_review.core.adr.names import canonical_id_key
from adr_review.core.results import Candidate, Relevance

HEAD = 5  # the places the evidence was fitted on: a candidate further down is shown only when linked
FEATURES = ("fused", "rank", "bm25_z", "dense_z", "title", "coverage", "rare_idf", "rare_count", "pool")
# The guard's own features of a candidate against a diff (app/adr_review/core/guard_features.py).
GUARD_FEATURES = ("added_rare_z", "path_z", "deps", "margin", "title_text", "body_text")


@dataclass(frozen=True)
class Background:
    """The distribution of the pool's scores for one query: what an arbitrary ADR of it scores."""

    size: int
    bm25_mean: float = 0.0
    bm25_std: float = 0.0
    dense_mean: float = 0.0
    dense_std: float = 0.0

    @classmethod
    def of(cls, bm25: Sequence[float], dense: Sequence[float | None]) -> Background:
        cosines = [d for d in dense if d is not None]
        b_mean, b_std = _mean_std(bm25)
        d_mean, d_std = _mean_std(cosines)
        return cls(len(bm25), b_mean, b_std, d_mean, d_std)


@dataclass(frozen=True)
class EvidenceModel:
    """Logistic weights over standardised features, and the probability thresholds that use them."""

    intercept: float
    weights: Mapping[str, float]
    center: Mapping[str, float] = field(default_factory=dict)
    scale: Mapping[str, float] = field(default_factory=dict)
    floor: float = 0.1  # shown only at or above
    high: float = 0.5  # labelled high at or above
    med: float = 0.25  # labelled med at or above (low below, down to the floor)

    def __post_init__(self) -> None:
        unknown = set(self.weights) - set(FEATURES) - set(GUARD_FEATURES)
        if unknown:
            raise ValueError(f"unknown evidence features: {sorted(unknown)}")
        if not 0.0 <= self.floor <= self.med <= self.high <= 1.0:
            raise ValueError("need 0 <= floor <= med <= high <= 1")

    def weighs(self, names: Sequence[str]) -> bool:
        """Whether any of these features moves the probability (a feature it does not weigh need
        not be computed)."""
        return any(self.weights.get(name) for name in names)

    def probability(self, features: Mapping[str, float]) -> float:
        z = self.intercept
        for name, weight in self.weights.items():
            scale = self.scale.get(name) or 1.0
            z += weight * (features[name] - self.center.get(name, 0.0)) / scale
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def band(self, probability: float) -> Relevance | None:
        """The label a probability earns; None: below the floor, not shown."""
        if probability >= self.high:
            return "high"
        if probability >= self.med:
            return "med"
        if probability >= self.floor:
            return "low"
        return None


def features_of(candidate: Candidate, rank: int, background: Background) -> dict[str, float]:
    """The model's inputs for one candidate at `rank` (0-based) of its ranking."""
    dense = candidate.dense if candidate.dense is not None else background.dense_mean
    return {
        "fused": candidate.fused,
        "rank": math.log1p(rank),
        "bm25_z": _z(candidate.bm25, background.bm25_mean, background.bm25_std),
        "dense_z": _z(dense, background.dense_mean, background.dense_std),
        "title": candidate.title_match,
        "coverage": candidate.coverage,
        "rare_idf": math.log1p(candidate.rare_idf),
        "rare_count": math.log1p(candidate.rare_count),
        "pool": math.log(max(background.size, 1)),
    }


def assess(
    candidates: Sequence[Candidate],
    background: Background,
    model: EvidenceModel,
    unscored: frozenset[str] = frozenset(),
) -> tuple[Candidate, ...]:
    """Each candidate with its evidence (a probability), in the same order. The `unscored` paths (the
    cross-language slots, app/adr_review/core/fusion.py) are left None: their way in is the cross-language
    channel's own gate, which the lexical and dense features cannot see (near zero across scripts)."""
    return tuple(
        replace(
            c,
            evidence=None
            if c.adr.path in unscored
            else round(model.probability(features_of(c, rank, background)), 4),
        )
        for rank, c in enumerate(candidates)
    )


def shown_band(candidate: Candidate, model: EvidenceModel, *, linked: bool = False) -> Relevance | None:
    """The label a candidate is shown with, or None when its evidence does not earn it a row.

    An explicitly linked ADR is high; an unscored candidate (a cross-language slot, or a candidate
    that came with no evidence) is shown as low: nothing calibrated says more."""
    if linked:
        return "high"
    if candidate.evidence is None:
        return "low" if candidate.qualified else None
    return model.band(candidate.evidence)


def linked_paths(proposal: Adr, candidates: Sequence[Candidate]) -> frozenset[str]:
    """The candidates the proposal links to (an `ADR-N` mention, a link to its file, a typed
    relation such as supersedes): read from the proposal's parsed links (app/adr_review/core/adr/links.py)."""
    return frozenset(linked_to(proposal.links, [c.adr for c in candidates]))


def linked_to(links: Sequence[AdrLink], adrs: Iterable[Adr]) -> tuple[str, ...]:
    """The paths of `adrs` that `links` point at, in `adrs`' order: an id mention by its id key
    ("adr-12" is ADR-0012), a link to a file by the file's name."""
    keys = {canonical_id_key(link.target) for link in links}
    names = {posixpath.basename(link.target) for link in links}
    return tuple(
        a.path for a in adrs if canonical_id_key(a.adr_id) in keys or posixpath.basename(a.path) in names
    )


def eligible(
    candidates: Sequence[Candidate], model: EvidenceModel, linked: frozenset[str] = frozenset()
) -> list[tuple[int, Relevance]]:
    """(index, label) of every candidate whose evidence earns it a row, in rank order: those of the
    first HEAD places that pass the floor, and any the proposal links to. Unscored qualified
    candidates (see `shown_band`) are eligible wherever they stand: nothing calibrated placed them."""
    out = []
    for i, c in enumerate(candidates):
        if i >= HEAD and c.evidence is not None and c.adr.path not in linked:
            continue
        band = shown_band(c, model, linked=c.adr.path in linked)
        if band is not None:
            out.append((i, band))
    return out


def cap(label: Relevance, ceiling: Relevance | None) -> Relevance:
    """The lower of two labels (a model's label is never raised by the evidence, nor the reverse)."""
    if ceiling is None:
        return label
    return label if _ORDER[label] <= _ORDER[ceiling] else ceiling


_ORDER: dict[Relevance, int] = {"low": 0, "med": 1, "high": 2}


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _z(value: float, mean: float, std: float) -> float:
    return (value - mean) / std if std > 1e-12 else 0.0
