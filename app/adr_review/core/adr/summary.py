"""The summary: the decision's first paragraphs (else the context's, else the first prose after the
title) as the reader sees them, capped at SUMMARY_MAX characters on a sentence end.

Each paragraph (a list item's or a quote's too) is one line of the summary, in its visible text
(code-span content kept, no markup); nothing is added between paragraphs but the line break, so
every sentence of the summary lies inside one block of `reader_blocks` and an extractive quote of
it verifies as a passage of the ADR. Inside a paragraph its wrapped lines are re-joined (with a
space, or nothing next to CJK text, as GitHub shows them).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from adr_review.core.adr.fields import meta_line
from adr_review.core.adr.markdown import Block
from adr_review.core.adr.model import Heading
from adr_review.core.adr.sections import BULLET, Span, heading_key
from adr_review.core.adr.vocabulary import META_HEADINGS, SECTIONS
from adr_review.core.text import _is_cjk

SUMMARY_MAX = 600
# Paragraphs are cut before they are cleaned up, which keeps a hostile 1 MB paragraph linear.
MAX_PARAGRAPH_FOR_SUMMARY = 4_000
_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


def make_summary(
    spans: Mapping[str, Sequence[Span]],
    blocks: Sequence[Block],
    headings: Sequence[Heading],
    title_line: int | None,
    *,
    plain: bool,
) -> str:
    """`blocks`: the reader's blocks of the body (Markdown ones, or a plain-text file's paragraphs)."""
    starts = [b.line for b in blocks]
    order = ["decision", "context", *(s for s in SECTIONS if s not in ("decision", "context"))]
    for name in order:
        chosen = (
            blocks[i]
            for start, end in spans.get(name, ())
            for i in range(bisect.bisect_left(starts, start), bisect.bisect_left(starts, end))
        )
        s = _summary_from(chosen, plain=plain)
        if s:
            return s
    # No usable section: the first prose after the title, skipping metadata lines and Status/Changelog.
    start = (title_line + 1) if title_line is not None else 0
    skip: list[Span] = []
    for idx, h in enumerate(headings):
        if heading_key(h.text) in META_HEADINGS:
            skip.append((h.line, headings[idx + 1].line if idx + 1 < len(headings) else 1 << 62))
    return _summary_from(
        _outside(blocks[bisect.bisect_left(starts, start) :], skip), plain=plain, drop_meta=True
    )


def _outside(blocks: Sequence[Block], spans: Sequence[Span]) -> Iterator[Block]:
    """The blocks (in line order) that start outside every span (sorted, disjoint): one sweep."""
    k = 0
    for b in blocks:
        while k < len(spans) and spans[k][1] <= b.line:
            k += 1
        if k < len(spans) and spans[k][0] <= b.line:
            continue
        yield b


def _summary_from(blocks: Iterable[Block], *, plain: bool, drop_meta: bool = False) -> str:
    pieces: list[str] = []
    total = 0
    last_end: int | None = None
    for block in blocks:
        if block.kind != "paragraph":
            continue
        # Enough text, checked between groups of blocks with no blank line between them (a paragraph
        # and the tight list it introduces read as one).
        if total >= 120 and block.line != last_end:
            break
        last_end = block.end
        for s in _pieces(block, plain=plain, drop_meta=drop_meta):
            pieces.append(s)
            total += len(s)
    return _cap("\n".join(pieces))


def _pieces(block: Block, *, plain: bool, drop_meta: bool) -> list[str]:
    """A paragraph's text as summary lines: one, or for a plain-text file one per bullet item."""
    lines = [ln.strip() for ln in block.text[:MAX_PARAGRAPH_FOR_SUMMARY].split("\n")]
    lines = [ln for ln in lines if ln]
    if drop_meta:
        while lines and meta_line(lines[0]) and len(lines[0]) <= 120:
            lines = lines[1:]  # the head's "Status: ..." / "Date: ..." lines
    if not lines or all(ln.startswith("|") for ln in lines):
        return []  # nothing, or a table GitHub does not render as one
    if plain and _ATX.match(lines[0]):
        lines = lines[1:]
    out: list[str] = []
    fresh = True  # the next line starts a new piece
    for line in lines:
        # A plain-text file shows its markers: a line whose bullet or ">" is dropped starts a piece of
        # its own, so every piece stays one stretch of what the reader sees.
        piece = BULLET.sub("", re.sub(r"^>\s?", "", line)).strip() if plain else line
        if not piece:
            fresh = True
            continue
        if fresh or not out or piece != line:
            out.append(piece)
        elif _ends_cjk(out[-1]) or _starts_cjk(piece):
            out[-1] += piece
        else:
            out[-1] += " " + piece
        fresh = piece != line
    return [p for p in (re.sub(r"[ \t]+", " ", p).strip() for p in out) if p]


# The verifier's own notion (adr_review.core.text): a line break next to a CJK letter shows as nothing,
# anywhere else as a space, so the joined text stays a passage contains_verbatim() finds.
def _ends_cjk(s: str) -> bool:
    return bool(s) and _is_cjk(s[-1])


def _starts_cjk(s: str) -> bool:
    return bool(s) and _is_cjk(s[0])


def _cap(text: str, limit: int = SUMMARY_MAX) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(
        (m.end() for m in re.finditer(r"[.!?](?=\s)|[。！？]", head)),
        default=-1,
    )
    if cut >= limit // 3:
        return head[:cut].strip()
    space = max(head.rfind(" "), head.rfind("\n"))
    if space >= limit // 2:
        return head[:space].rstrip(",;:") + "…"
    return head.rstrip() + "…"
