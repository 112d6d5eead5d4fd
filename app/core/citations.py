"""Verification of the citations a model proposes (seed 000, filterValidCitations). Pure.

The seed's five steps, applied in its order as successive filters over the model's list:
  1. adr_id is in the candidate set (case and zero-padding do not matter: canonical_id_key);
  2. duplicates are dropped (the first mention of an id wins, even if it fails a later step);
  3. relevance_reason occurs verbatim, after NFKC + whitespace folding, in the proposal OR in the cited
     candidate's summary;
  4. a relevance outside high/med/low becomes low (counted, not dropped);
  5. the first `limit` (5) survivors are kept.
Faithful, not factual: a verbatim quote proves the words exist, not that the relation is sound.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from app.core.adr import Adr, canonical_id_key
from app.core.results import Relevance
from app.core.text import contains_verbatim

RELEVANCES: tuple[Relevance, ...] = ("high", "med", "low")

# Drop reasons, in the order of the steps that produce them.
MALFORMED = "malformed"  # not an object with a string adr_id
NOT_A_CANDIDATE = "not_a_candidate"  # step 1
DUPLICATE = "duplicate"  # step 2
EMPTY_REASON = "empty_reason"  # step 3, nothing to check
NOT_VERBATIM = "not_verbatim"  # step 3
OVER_LIMIT = "over_limit"  # step 5


@dataclass(frozen=True)
class CandidateText:
    """What verification needs to know about a candidate."""

    adr_id: str
    summary: str


@dataclass(frozen=True)
class VerifiedCitation:
    candidate_index: int  # position in the candidate sequence given to verify_citations
    adr_id: str  # the candidate's id as the index wrote it, not the model's spelling
    relevance: Relevance
    relevance_reason: str  # the model's quote, stripped
    quoted_from: Literal["proposal", "summary"]


@dataclass(frozen=True)
class Verification:
    kept: tuple[VerifiedCitation, ...]
    proposed: int  # how many citations the model gave
    dropped: Mapping[str, int] = field(default_factory=dict)  # reason -> count; absent when 0
    relevance_normalized: int = 0  # step 4 rewrites

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())


def verify_citations(
    proposed: Sequence[Any],
    candidates: Sequence[CandidateText],
    proposal_texts: Sequence[str],
    *,
    limit: int = 5,
) -> Verification:
    """Keep the model's citations that pass the seed's five steps; count the rest by reason."""
    dropped: Counter[str] = Counter()
    by_key: dict[str, int] = {}
    for i, cand in enumerate(candidates):
        by_key.setdefault(canonical_id_key(cand.adr_id), i)

    # 1. membership of the candidate set
    members: list[tuple[int, Mapping[str, Any]]] = []
    for item in proposed:
        if not isinstance(item, Mapping) or not isinstance(item.get("adr_id"), str):
            dropped[MALFORMED] += 1
            continue
        index = by_key.get(canonical_id_key(item["adr_id"]))
        if index is None:
            dropped[NOT_A_CANDIDATE] += 1
            continue
        members.append((index, item))

    # 2. dedupe
    seen: set[int] = set()
    unique: list[tuple[int, Mapping[str, Any]]] = []
    for index, item in members:
        if index in seen:
            dropped[DUPLICATE] += 1
            continue
        seen.add(index)
        unique.append((index, item))

    # 3. verbatim in the proposal or the cited candidate's summary; 4. relevance enum
    verified: list[VerifiedCitation] = []
    normalized = 0
    for index, item in unique:
        reason = item.get("relevance_reason")
        reason = reason.strip() if isinstance(reason, str) else ""
        if not reason:
            dropped[EMPTY_REASON] += 1
            continue
        source = _quoted_from(reason, proposal_texts, candidates[index].summary)
        if source is None:
            dropped[NOT_VERBATIM] += 1
            continue
        relevance = normalize_relevance(item.get("relevance"))
        if relevance is None:
            normalized += 1
            relevance = "low"
        verified.append(
            VerifiedCitation(
                candidate_index=index,
                adr_id=candidates[index].adr_id,
                relevance=relevance,
                relevance_reason=reason,
                quoted_from=source,
            )
        )

    # 5. the first `limit`
    if len(verified) > limit:
        dropped[OVER_LIMIT] += len(verified) - limit
        verified = verified[:limit]
    return Verification(
        kept=tuple(verified),
        proposed=len(proposed),
        dropped=dict(dropped),
        relevance_normalized=normalized,
    )


def normalize_relevance(value: Any) -> Relevance | None:
    """high/med/low in any case or padding; None for anything else (the caller maps it to low)."""
    if isinstance(value, str):
        v = value.strip().casefold()
        if v in RELEVANCES:
            return cast(Relevance, v)
    return None


def _quoted_from(
    reason: str, proposal_texts: Sequence[str], summary: str
) -> Literal["proposal", "summary"] | None:
    if any(contains_verbatim(text, reason) for text in proposal_texts):
        return "proposal"
    if contains_verbatim(summary, reason):
        return "summary"
    return None


def successor_of(adr: Adr, folder: Sequence[Adr]) -> str | None:
    """The id of the ADR that supersedes `adr`, or None when it is not superseded or none is known.

    Read from the ADR's own superseded-by link, else from another ADR's supersedes link to it (when
    this one says it is superseded or the other is accepted: a mere proposal does not supersede);
    a link target that is a file name is resolved to that file's id.
    """
    for link in adr.links:
        if link.kind == "superseded_by":
            return _resolve(link.target, folder)
    own = canonical_id_key(adr.adr_id)
    name = posixpath.basename(adr.path)
    for other in folder:
        if other.path == adr.path:
            continue
        for link in other.links:
            if (
                link.kind == "supersedes"
                and (adr.status == "superseded" or other.status == "accepted")
                and (canonical_id_key(link.target) == own or posixpath.basename(link.target) == name)
            ):
                return other.adr_id
    return None


def _resolve(target: str, folder: Sequence[Adr]) -> str:
    key = canonical_id_key(target)
    base = posixpath.basename(target)
    for other in folder:
        if canonical_id_key(other.adr_id) == key or posixpath.basename(other.path) == base:
            return other.adr_id
    return target
