"""Verification of what a model quotes: recall citations here, blind-spot findings in findings.py. Pure.

A quote verifies when it is one contiguous passage of the text a reader sees on GitHub
(app/adr_review/core/passages.py: code-span content kept, nothing joined across blocks, nothing from HTML comments
or other invisible text), after NFKC + whitespace folding, and has substance: at least MIN_SUBSTANCE
content units, where an English word counts 1 and a kanji or katakana 0.5 (a Japanese word is about
two characters), so `e`, `the` and `の` are no reason in either language.

Citations (seed 000, filterValidCitations), each proposed item in turn:
  1. adr_id is in the candidate set (after NFKC; case and zero-padding do not matter);
  2. relevance_reason verifies as a quote of the cited candidate OR of the proposal (a quote found in
     both is the candidate's: it says something about the cited ADR);
  3. a relevance outside high/med/low becomes low (counted, not dropped), and a reason found only in
     the proposal caps it at med (counted: `capped_relevance`);
then 4. duplicates are dropped among the *verified* citations (the first wins: a valid citation is not
lost to an invalid twin written in another case), and 5. the first `limit` (5) are kept.
Faithful, not factual: a verbatim quote proves the words exist, not that the relation is sound.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from adr_review.core.adr import Adr, canonical_id_key, strip_list_marker
from adr_review.core.passages import Passage, passages_of
from adr_review.core.results import QuoteSource, Relevance
from adr_review.core.text import contains_verbatim, normalize

RELEVANCES: tuple[Relevance, ...] = ("high", "med", "low")

# Drop reasons, in the order of the steps that produce them.
MALFORMED = "malformed"  # not an object with a string adr_id
NOT_A_CANDIDATE = "not_a_candidate"  # step 1
EMPTY_REASON = "empty_reason"  # step 2, nothing to check
TOO_SHORT = "too_short"  # step 2, no substance
NOT_VERBATIM = "not_verbatim"  # step 2, not one passage of what a reader sees
DUPLICATE = "duplicate"  # step 4
OVER_LIMIT = "over_limit"  # step 5

MIN_SUBSTANCE = 3.0
# The highest relevance a reason from each source can earn on its own. A sentence of the proposal says
# what the proposal is about and nothing about the cited ADR, so it never makes a row "high".
RELEVANCE_CEILING: Mapping[QuoteSource, Relevance] = {"candidate": "high", "proposal": "med"}
# Words that carry no content on their own (a reason made of them says nothing).
_FUNCTION_WORDS = frozenset(
    """a an and are as at be by for from has have if in into is it its of on or so than that the
    their then there these this those to was were which with we our you your i he she they them""".split()  # noqa: SIM905
)
# Quote marks and trailing ellipses a model wraps around a quote; they are not part of it.
_WRAPPERS = "\"'“”‘’「」『』«»`"
_CJK = "\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f"
_UNIT = re.compile(rf"(?P<kana>[\u3040-\u309f])|(?P<cjk>[{_CJK}])|[^\W_\u3040-\u309f{_CJK}]+")
_CODE_MARK = re.compile(r"`+([^`]+)`+")
_STRONG_MARK = re.compile(r"(\*\*|__)(\S(?:.*?\S)?)\1")
_EM_MARK = re.compile(r"(?<![\w*])([*_])(\S(?:.*?\S)?)\1(?![\w*])")
_TRAILING = re.compile(r"(?:\.\.\.|…|[.。．!！?？、,，;；:：])+$")


def substance(text: str) -> float:
    """Content units: 1 per word of two or more letters (or a number) outside the function words,
    0.5 per kanji / katakana / hangul character, 0.25 per hiragana (particles and endings)."""
    units = 0.0
    for m in _UNIT.finditer(normalize(text)):
        piece = m.group(0)
        if m.group("kana"):
            units += 0.25
        elif m.group("cjk"):
            units += 0.5
        elif (len(piece) >= 2 or piece.isdigit()) and piece not in _FUNCTION_WORDS:
            units += 1
    return units


def has_substance(text: str) -> bool:
    return substance(text) >= MIN_SUBSTANCE


@dataclass(frozen=True)
class QuoteCheck:
    """The verdict on one quote: `problem` is None when it verified, in `passage` of source `source`."""

    quote: str  # the quote as verified (wrapping quote marks and a trailing full stop trimmed)
    problem: str | None  # EMPTY_REASON | TOO_SHORT | NOT_VERBATIM
    source: int = -1  # index of the passage list it was found in
    passage: Passage | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def check_quote(quote: Any, *sources: Sequence[Passage]) -> QuoteCheck:
    """Whether `quote` is one passage's verbatim text (in the first source that has it), with substance.

    Forgiven, and shown in the verified form: quote marks wrapped around the quote, a full stop the
    passage does not have, inline Markdown marks (`code`, **strong**, _em_) copied from the source
    that a reader does not see, and a leading list marker (`* `, `- `, `1. `). Nothing else: not a
    changed character, not a join.
    """
    text = quote.strip() if isinstance(quote, str) else ""
    if not text:
        return QuoteCheck("", EMPTY_REASON)
    variants = [text]
    bare = strip_list_marker(text)
    for variant in (_trim(text), _unmark(text), _trim(_unmark(text)), bare, _trim(_unmark(bare))):
        if variant and variant not in variants:
            variants.append(variant)
    for variant in variants:
        for i, passages in enumerate(sources):
            passage = next((p for p in passages if contains_verbatim(p.text, variant)), None)
            if passage is not None:
                if not has_substance(variant):
                    return QuoteCheck(variant, TOO_SHORT, i, passage)
                return QuoteCheck(variant, None, i, passage)
    return QuoteCheck(text, TOO_SHORT if not has_substance(text) else NOT_VERBATIM)


def _unmark(text: str) -> str:
    """The quote without inline Markdown marks (code spans, emphasis) that a reader does not see."""
    s = _CODE_MARK.sub(r"\1", text)
    s = _STRONG_MARK.sub(r"\2", s)
    return _EM_MARK.sub(r"\2", s)


def _trim(text: str) -> str:
    s = text
    for _ in range(2):
        s = s.strip().strip(_WRAPPERS).strip()
        s = _TRAILING.sub("", s).strip()
    return s


class CandidateText:
    """What verification needs to know about a candidate: its id and the passages a reader sees.

    An ADR's passages are read on first use: verification reads only those of the candidates cited
    (reading every candidate's markdown was a third of an extractive recall's time at 644 ADRs)."""

    __slots__ = ("_adr", "_passages", "adr_id")

    def __init__(self, adr_id: str, passages: Sequence[Passage] | None = None, *, adr: Adr | None = None):
        self.adr_id = adr_id
        self._passages = tuple(passages) if passages is not None else None
        self._adr = adr

    @property
    def passages(self) -> tuple[Passage, ...]:
        if self._passages is None:
            self._passages = passages_of(self._adr) if self._adr is not None else ()
        return self._passages

    @classmethod
    def of(cls, adr: Adr) -> CandidateText:
        return cls(adr.adr_id, adr=adr)


@dataclass(frozen=True)
class VerifiedCitation:
    candidate_index: int  # position in the candidate sequence given to verify_citations
    adr_id: str  # the candidate's id as the index wrote it, not the model's spelling
    relevance: Relevance
    relevance_reason: str  # the model's quote, as verified
    quoted_from: QuoteSource
    section: str = ""  # the heading the quote stands under ("" before the first heading)


@dataclass(frozen=True)
class Verification:
    kept: tuple[VerifiedCitation, ...]
    proposed: int  # how many citations the model gave
    dropped: Mapping[str, int] = field(default_factory=dict)  # reason -> count; absent when 0
    relevance_normalized: int = 0  # step 3 rewrites of an unknown relevance
    relevance_capped: int = 0  # step 3: kept citations lowered because their reason is the proposal's

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())


def verify_citations(
    proposed: Sequence[Any],
    candidates: Sequence[CandidateText],
    proposal: Sequence[Passage],
    *,
    limit: int = 5,
) -> Verification:
    """Keep the model's citations that pass the steps above; count the rest by reason."""
    dropped: Counter[str] = Counter()
    by_key: dict[str, int] = {}
    for i, cand in enumerate(candidates):
        by_key.setdefault(canonical_id_key(cand.adr_id), i)

    verified: list[VerifiedCitation] = []
    normalized = capped = 0
    for item in proposed:
        if not isinstance(item, Mapping) or not isinstance(item.get("adr_id"), str):
            dropped[MALFORMED] += 1
            continue
        index = by_key.get(canonical_id_key(item["adr_id"]))
        if index is None:
            dropped[NOT_A_CANDIDATE] += 1
            continue
        check = check_quote(item.get("relevance_reason"), candidates[index].passages, proposal)
        if check.problem is not None:
            dropped[check.problem] += 1
            continue
        quoted_from: QuoteSource = "candidate" if check.source == 0 else "proposal"
        relevance = normalize_relevance(item.get("relevance"))
        if relevance is None:
            normalized += 1
            relevance = "low"
        shown = capped_relevance(relevance, quoted_from)
        capped += shown != relevance
        verified.append(
            VerifiedCitation(
                candidate_index=index,
                adr_id=candidates[index].adr_id,
                relevance=shown,
                relevance_reason=check.quote,
                quoted_from=quoted_from,
                section=check.passage.section if check.passage else "",
            )
        )

    unique: list[VerifiedCitation] = []
    seen: set[int] = set()
    for v in verified:
        if v.candidate_index in seen:
            dropped[DUPLICATE] += 1
            continue
        seen.add(v.candidate_index)
        unique.append(v)

    if len(unique) > limit:
        dropped[OVER_LIMIT] += len(unique) - limit
        unique = unique[:limit]
    return Verification(
        kept=tuple(unique),
        proposed=len(proposed),
        dropped=dict(dropped),
        relevance_normalized=normalized,
        relevance_capped=capped,
    )


def capped_relevance(relevance: Relevance, quoted_from: QuoteSource) -> Relevance:
    """`relevance`, lowered to what a reason from `quoted_from` can earn (RELEVANCE_CEILING)."""
    ceiling = RELEVANCE_CEILING[quoted_from]
    return max(relevance, ceiling, key=RELEVANCES.index)


def normalize_relevance(value: Any) -> Relevance | None:
    """high/med/low in any case or padding; None for anything else (the caller maps it to low)."""
    if isinstance(value, str):
        v = value.strip().casefold()
        if v in RELEVANCES:
            return cast(Relevance, v)
    return None


def successor_of(adr: Adr, folder: Sequence[Adr]) -> str | None:
    """The id of the ADR that supersedes `adr`, or None when it is not superseded or none is known.

    Read from the ADR's own superseded-by link, else from another ADR's supersedes link to it (when
    this one says it is superseded or the other is accepted: a mere proposal does not supersede);
    a link target that is a file name is resolved to that file's id.
    """
    for link in adr.links:
        if link.kind == "superseded_by":
            return resolve_target(link.target, folder)
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


def resolve_target(target: str, folder: Sequence[Adr]) -> str:
    """The id of the folder's ADR a link target names (an id or a file name); the target if none."""
    key = canonical_id_key(target)
    base = posixpath.basename(target)
    for other in folder:
        if canonical_id_key(other.adr_id) == key or posixpath.basename(other.path) == base:
            return other.adr_id
    return target
