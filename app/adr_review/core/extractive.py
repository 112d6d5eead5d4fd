"""Extractive recall: citations without a model. Pure.

Each of the top qualified candidates is cited with the sentence of its decision (else its context,
else any section: where its summary comes from) that shares the most terms with the proposal. The
sentence is cut from one passage a reader sees (app/adr_review/core/passages.py) and must have substance, so the
reason meets the rule a model's quote is held to by construction (code-span content kept, never two
passages joined across a list or a code block) and passes the same verification. Which candidates get a row, and their
label, is the calibrated evidence's (app/adr_review/core/evidence.py), never the rank relative to the best hit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from adr_review.core.adr import Adr
from adr_review.core.citations import has_substance
from adr_review.core.evidence import EvidenceModel, eligible
from adr_review.core.evidence_model import DEFAULT_EVIDENCE
from adr_review.core.passages import Passage, is_markdown_path, reader_passages
from adr_review.core.results import Candidate, Relevance
from adr_review.core.text import FUNCTION_WORDS, tokenize

MAX_REASON_CHARS = 300
_MIN_TERMS = 8

# A sentence ends after . ! ? followed by whitespace, after 。！？ or at a line break.
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")


@dataclass(frozen=True)
class ExtractivePick:
    candidate_index: int
    relevance: Relevance
    reason: str
    quoted_from: Literal["proposal", "candidate"]


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
    return {t for t in tokenize(text) if t not in FUNCTION_WORDS}


def best_sentence(text: str | Sequence[Passage], query_terms: set[str]) -> str | None:
    """The sentence sharing the most terms with the query (length-damped); earliest on ties.

    `text` is a plain string or a document's passages; sentences never cross a passage. Only a
    sentence with substance can win. Returns a substring of one passage (capped at MAX_REASON_CHARS,
    at a word boundary when there is one), or None if nothing qualifies.
    """
    texts = [text] if isinstance(text, str) else [p.text for p in text]
    best: tuple[float, str] | None = None
    for passage in texts:
        for start, end in sentence_spans(passage):
            sentence = _cap(passage[start:end])
            if not has_substance(sentence):
                continue
            terms = _terms(sentence)
            # Damped by length, but not below _MIN_TERMS: a parenthetical fragment is not a reason.
            score = len(terms & query_terms) / math.sqrt(max(len(terms), _MIN_TERMS)) if terms else 0.0
            if best is None or score > best[0]:
                best = (score, sentence)
    return best[1] if best else None


_PROSE = frozenset({"paragraph", "plain", "html", "cell"})


def summary_passages(adr: Adr) -> tuple[Passage, ...]:
    """The prose passages of the section the summary is drawn from: decision, else context, else any."""
    markdown = is_markdown_path(adr.path)
    names = ["decision", "context", *(k for k in adr.sections if k not in ("decision", "context"))]
    for name in names:
        text = adr.sections.get(name) or ""
        prose = tuple(p for p in reader_passages(text, markdown=markdown) if p.kind in _PROSE)
        if any(has_substance(p.text) for p in prose):
            return prose
    return ()


def _cap(sentence: str) -> str:
    if len(sentence) <= MAX_REASON_CHARS:
        return sentence
    cut = sentence[:MAX_REASON_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > MAX_REASON_CHARS // 2 else cut).rstrip()


def pick_extractive(
    candidates: Sequence[Candidate],
    proposal_text: str,
    proposal_passages: Sequence[Passage] = (),
    *,
    evidence: EvidenceModel = DEFAULT_EVIDENCE,
    limit: int = 5,
    linked: frozenset[str] = frozenset(),
) -> list[ExtractivePick]:
    """Up to `limit` candidates whose calibrated evidence earns them a row (app/adr_review/core/evidence.py:
    the floor, or a link from the proposal), in rank order, each with its best-matching summary
    sentence and the label its evidence earns.

    `proposal_text` gives the query terms; `proposal_passages` (default: those of `proposal_text`)
    what a candidate with nothing to quote is cited with instead: the proposal's sentence closest to
    its text (still verbatim). A candidate with neither is skipped.
    """
    query_terms = _terms(proposal_text)
    own = tuple(proposal_passages) or reader_passages(proposal_text)
    picks: list[ExtractivePick] = []
    for index, band in eligible(candidates, evidence, linked):
        if len(picks) >= limit:
            break
        cand = candidates[index]
        # An ADR in another language shares few terms with the proposal: its summary sentence closest
        # to the passage the cross-language scorer matched (same language, so the terms meet) says why.
        terms = _terms(cand.cross_language_evidence) if cand.cross_language_evidence else query_terms
        reason = best_sentence(summary_passages(cand.adr), terms)
        source: Literal["proposal", "candidate"] = "candidate"
        if reason is None:
            prose = [p for p in own if p.kind in _PROSE]
            reason = best_sentence(prose, _terms(f"{cand.adr.title}\n{cand.adr.text}"))
            source = "proposal"
        if reason is None:
            continue
        picks.append(ExtractivePick(candidate_index=index, relevance=band, reason=reason, quoted_from=source))
    return picks
