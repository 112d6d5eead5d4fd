"""Extractive recall: citations without a model. Pure.

Each of the top qualified candidates is cited with the sentence of its summary that shares the most
terms with the proposal; the reason is a slice of the summary, so it is verbatim by construction and
passes the same verification as a model's quote. Relevance comes from the candidate's fused score
relative to the best candidate's, in configurable bands.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from app.core.results import Candidate, Relevance
from app.core.text import tokenize

MAX_REASON_CHARS = 300
_MIN_TERMS = 8

# A sentence ends after . ! ? followed by whitespace, after 。！？ or at a line break.
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
# Function words that make every sentence look alike (English words; Japanese kana bigrams).
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "we",
        "will",
        "with",
        "use",
        "する",
        "して",
        "した",
        "ます",
        "です",
        "この",
        "その",
        "ある",
        "いる",
        "こと",
        "ため",
        "れる",
        "られ",
        "ない",
    ]
)


@dataclass(frozen=True)
class ExtractivePick:
    candidate_index: int
    relevance: Relevance
    reason: str
    quoted_from: Literal["proposal", "summary"]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-blank sentence, stripped, as offsets into `text`."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in [*_BOUNDARY.finditer(text), None]:
        end = m.start() if m else len(text)
        seg = text[start:end]
        if seg.strip():
            lead = len(seg) - len(seg.lstrip())
            spans.append((start + lead, start + len(seg.rstrip())))
        if m:
            start = m.end()
    return spans


def _terms(text: str) -> set[str]:
    return {t for t in tokenize(text) if t not in _STOP}


def best_sentence(text: str, query_terms: set[str]) -> str | None:
    """The sentence of `text` sharing the most terms with the query (length-damped); earliest on ties.

    Returns a substring of `text` (capped at MAX_REASON_CHARS at a word boundary), or None if blank.
    """
    best: tuple[float, int, int] | None = None
    for start, end in sentence_spans(text):
        terms = _terms(text[start:end])
        # Damped by length, but not below _MIN_TERMS: a parenthetical fragment is not a reason.
        score = len(terms & query_terms) / math.sqrt(max(len(terms), _MIN_TERMS)) if terms else 0.0
        if best is None or score > best[0]:
            best = (score, start, end)
    if best is None:
        return None
    return _cap(text[best[1] : best[2]])


def _cap(sentence: str) -> str:
    if len(sentence) <= MAX_REASON_CHARS:
        return sentence
    cut = sentence[:MAX_REASON_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > MAX_REASON_CHARS // 2 else cut).rstrip()


def relevance_band(score: float, best: float, *, high: float, med: float) -> Relevance:
    rel = score / best if best > 0 else 0.0
    if rel >= high:
        return "high"
    if rel >= med:
        return "med"
    return "low"


def pick_extractive(
    candidates: Sequence[Candidate],
    proposal_text: str,
    *,
    limit: int = 5,
    high: float = 0.75,
    med: float = 0.4,
) -> list[ExtractivePick]:
    """Up to `limit` qualified candidates in rank order, each with its best-matching summary sentence.

    A candidate without a summary is cited with the proposal's sentence closest to its text instead
    (still verbatim); one with neither is skipped.
    """
    query_terms = _terms(proposal_text)
    qualified = [(i, c) for i, c in enumerate(candidates) if c.qualified]
    best_score = max((c.fused for _, c in qualified), default=0.0)
    picks: list[ExtractivePick] = []
    for index, cand in qualified:
        if len(picks) >= limit:
            break
        reason = best_sentence(cand.adr.summary, query_terms)
        source: Literal["proposal", "summary"] = "summary"
        if reason is None:
            reason = best_sentence(proposal_text, _terms(f"{cand.adr.title}\n{cand.adr.text}"))
            source = "proposal"
        if reason is None:
            continue
        band = relevance_band(cand.fused, best_score, high=high, med=med)
        picks.append(ExtractivePick(candidate_index=index, relevance=band, reason=reason, quoted_from=source))
    return picks
