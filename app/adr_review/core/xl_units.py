"""Cross-language units: the short passages a sentence encoder compares across languages.

A multilingual sentence encoder (USE v3) is trained on sentences: a whole card (title + summary +
decision) averages a proposal's one paragraph about personal data in events into everything else it
says, and long texts are slow to embed. So the cross-language channel compares passages: the
visible paragraphs and list items of an ADR (adr_review.core.adr.reader, what a reader sees: no link
targets, emphasis or table cells), long ones cut at sentence ends, the decision's first (that is
what a later proposal most often touches), then the context, then the rest in reading order, at most
`limit` of them. A query (a proposal's recall text) is cut the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from adr_review.core.adr import Adr
from adr_review.core.adr.reader import ReaderBlock, reader_blocks, text_reader_blocks

ADR_PASSAGES = 16  # per ADR: embedded once per content hash
QUERY_PASSAGES = 24  # per query: embedded at every search
PASSAGE_CHARS = 160  # a longer passage is cut at sentence ends: the encoder's cost grows with length squared
MIN_CHARS = 12  # shorter blocks ("Status: accepted", "Good.") say nothing a neighbour could match
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?;])\s+")
_WS = re.compile(r"\s+")
_FIELD = re.compile(r"^[^\s:：][^:：]{0,24}[:：]")  # "Status: accepted", "日付: 2024-09-02"


def passages_key(limit: int = ADR_PASSAGES, chars: int = PASSAGE_CHARS) -> str:
    """Stable description of what is embedded: stored with the vectors, a change re-embeds."""
    return f"passages/1:decision-first:{limit}x{chars}"


def adr_passages(adr: Adr, limit: int = ADR_PASSAGES, chars: int = PASSAGE_CHARS) -> list[str]:
    """The title, then the decision's passages, the context's, then the others', without repeats."""
    every = reader_blocks(adr)
    preamble = ("", next((b.text for b in every if b.kind == "heading"), ""))  # under the title
    blocks = [
        b
        for b in every
        if b.kind in ("paragraph", "plain") and not (b.section in preamble and _is_field(b.text))
    ]
    decision = _fold(adr.sections.get("decision", ""))
    context = _fold(adr.sections.get("context", ""))

    def rank(b: ReaderBlock) -> int:
        folded = _fold(b.text)
        return 0 if folded and folded in decision else 1 if folded and folded in context else 2

    ordered = sorted(blocks, key=rank)  # stable: reading order within each group
    return _dedupe([adr.title, *_cut(ordered, chars)], limit)


def query_passages(text: str, limit: int = QUERY_PASSAGES, chars: int = PASSAGE_CHARS) -> list[str]:
    """A query's passages in reading order (its headings too: a proposal's title is one)."""
    blocks = [b for b in text_reader_blocks(text) if b.kind in ("paragraph", "heading", "plain")]
    got = _dedupe(_cut(blocks, chars), limit)
    return got or [text.strip()[:chars]] if text.strip() else []


def _cut(blocks: Iterable[ReaderBlock], chars: int) -> list[str]:
    out: list[str] = []
    for b in blocks:
        text = b.text.strip()
        if len(text) <= chars:
            out.append(text)
            continue
        buf = ""
        for sentence in _SENTENCE_END.split(text):
            sentence = sentence.strip()
            if buf and len(buf) + 1 + len(sentence) > chars:
                out.append(buf)
                buf = ""
            buf = f"{buf} {sentence}".strip() if buf else sentence
        if buf:
            out.append(buf[:chars])
    return [p[:chars] for p in out]


def _dedupe(texts: Iterable[str], limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for t in texts:
        t = t.strip()
        if len(t) >= MIN_CHARS and t not in seen:
            seen[t] = None
            if len(seen) == limit:
                break
    return list(seen)


def _is_field(text: str) -> bool:
    """A metadata line under the title (status, date, deciders, related): nothing to match."""
    return len(text) < 100 and _FIELD.match(text) is not None


def _fold(text: str) -> str:
    return _WS.sub(" ", text).strip()
