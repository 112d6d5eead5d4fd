"""The summary: the decision's first paragraphs (else the context's, else the first prose after the
title) as plain sentences, capped at SUMMARY_MAX characters on a sentence end."""

from __future__ import annotations

import re
from collections.abc import Mapping

from app.core.adr.blocks import BULLET, clean_inline, is_atx_heading, paragraphs
from app.core.adr.fields import META_LINE
from app.core.adr.model import Heading
from app.core.adr.sections import heading_key
from app.core.adr.vocabulary import META_HEADINGS, SECTIONS

SUMMARY_MAX = 600
# Summary paragraphs are cut before markdown clean-up, which keeps a hostile 1 MB paragraph linear.
MAX_PARAGRAPH_FOR_SUMMARY = 4_000


def make_summary(
    sections: Mapping[str, str], lines: list[str], blocks: list[Heading], title_line: int | None
) -> str:
    for name in ("decision", "context"):
        text = sections.get(name)
        if text:
            s = _summary_from(text)
            if s:
                return s
    for name in SECTIONS:
        if sections.get(name):
            s = _summary_from(sections[name])
            if s:
                return s
    # No usable section: the first prose after the title, skipping metadata lines and Status/Changelog.
    start = (title_line + 1) if title_line is not None else 0
    skip: set[int] = set()
    for idx, h in enumerate(blocks):
        skip.add(h.line)
        if heading_key(h.text) in META_HEADINGS:
            end = blocks[idx + 1].line if idx + 1 < len(blocks) else len(lines)
            skip.update(range(h.line, end))
    body_lines = [
        ln
        for i, ln in enumerate(lines)
        if i >= start and i not in skip and (not META_LINE.match(ln) or len(ln) > 120)
    ]
    return _summary_from("\n".join(body_lines))


def _summary_from(text: str) -> str:
    pieces: list[str] = []
    total = 0
    for para in paragraphs(text.split("\n")):
        if is_atx_heading(para) and "\n" not in para:
            continue
        s = _summary_paragraph(para)
        if not s:
            continue
        pieces.append(s)
        total += len(s)
        if total >= 120:
            break
    joined = ""
    for p in pieces:
        joined = _end_sentence(joined, ". ") + p if joined else p
    return _cap(joined)


def _summary_paragraph(para: str) -> str | None:
    """One paragraph as a plain sentence run: wrapped lines re-joined, list items separated."""
    lines = [ln for ln in para[:MAX_PARAGRAPH_FOR_SUMMARY].split("\n") if ln.strip()]
    if not lines or all(ln.lstrip().startswith("|") for ln in lines):
        return None  # nothing, or a table
    if is_atx_heading(lines[0]):
        lines = lines[1:]
    joined = ""
    for raw in lines:
        is_item = bool(BULLET.match(raw))
        piece = BULLET.sub("", re.sub(r"^\s*>\s?", "", raw)).strip()
        if not piece:
            continue
        if not joined:
            joined = piece
        elif is_item:
            joined = _end_sentence(joined, "; ") + piece
        elif _ends_cjk(joined) or _starts_cjk(piece):
            joined += piece
        else:
            joined += " " + piece
    text = clean_inline(joined)
    return text or None


def _end_sentence(text: str, latin_sep: str) -> str:
    """Separator before the next item: nothing after 。/:, 。 after CJK, latin_sep otherwise."""
    if re.search(r"[。．！？:：]$", text):
        return text if _ends_cjk(text) else text + " "
    if _ends_cjk(text):
        return text + "。"
    if re.search(r"[.;!?]$", text):
        return text + " "
    return text + latin_sep


def _ends_cjk(s: str) -> bool:
    return bool(s) and ord(s[-1]) > 0x2E80


def _starts_cjk(s: str) -> bool:
    return bool(s) and ord(s[0]) > 0x2E80


def _cap(text: str, limit: int = SUMMARY_MAX) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(
        (m.end() for m in re.finditer(r"[.!?](?=\s)|[。！？]", head)),
        default=-1,
    )
    if cut >= limit // 3:
        return head[:cut].strip()
    space = head.rfind(" ")
    if space >= limit // 2:
        return head[:space].rstrip(",;:") + "…"
    return head.rstrip() + "…"
