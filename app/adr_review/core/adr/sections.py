"""Heading text -> canonical section (through the vocabulary), each section's body (its source lines and
their text), and the headings of a plain-text export, which has no Markdown ones."""

from __future__ import annotations

import functools
import re

from adr_review.core.adr.model import Heading
from adr_review.core.adr.vocabulary import FALLBACK_HEADINGS, META_HEADINGS, SECTION_HEADINGS, SECTIONS

# Headings longer than this are not section headings; the cap keeps the key's patterns cheap.
MAX_HEADING = 300

_NUMBERING = re.compile(r"^(?:§\s*)?(?:\d+(?:\.\d+)*\.?|[ivx]+\.|[a-z]\))\s+", re.IGNORECASE)
_GLOSS = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")
_COMPOUND = re.compile(r"[・/／&＆、,]|\s+and\s+|と(?=[^\x00-\x7f])")


_COMMENT = re.compile(r"<!--.*?-->")
_MARKS = re.compile(r"[*_`]")
_OPTIONAL_HEAD = re.compile(r"^\[?(optional|オプション)\]?\s*", re.IGNORECASE)
_OPTIONAL_TAIL = re.compile(r"\s*\[optional\]$", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


@functools.lru_cache(maxsize=16_384)
def heading_key(text: str) -> str:
    """The lookup key of a heading: numbering, glosses, emphasis, "[optional]" and case removed."""
    s = _MARKS.sub("", _COMMENT.sub("", text[:MAX_HEADING])).strip()
    s = s.replace("：", ":").rstrip(":").strip()
    s = s.lstrip("§").strip()
    s = _NUMBERING.sub("", s)
    prev = None
    while prev != s:
        prev = s
        s = _GLOSS.sub("", s).strip()
    s = _OPTIONAL_TAIL.sub("", _OPTIONAL_HEAD.sub("", s))
    return _SPACES.sub(" ", s).casefold().strip(" .:-")


@functools.lru_cache(maxsize=16_384)
def heading_section(text: str) -> tuple[str | None, bool]:
    """(canonical section, is_primary) for a heading text; "背景・課題" counts as its first part."""
    key = heading_key(text)
    for k in (key, _COMPOUND.split(key, maxsplit=1)[0].strip()):
        if k in SECTION_HEADINGS:
            return SECTION_HEADINGS[k], True
        if k in FALLBACK_HEADINGS:
            return FALLBACK_HEADINGS[k], False
    return None, False


Span = tuple[int, int]  # source lines [start, end)


def extract_sections(
    lines: list[str], blocks: list[Heading], *, skip_line: int | None
) -> tuple[dict[str, str], dict[str, list[Span]]]:
    """(canonical section -> its text, canonical section -> its bodies' line spans); a fallback heading
    counts only when no primary one is present."""
    info = [heading_section(h.text) for h in blocks]
    primary_present = {sec for sec, prim in info if sec is not None and prim}
    found: dict[str, list[str]] = {}
    spans: dict[str, list[Span]] = {}
    enclosing = _enclosing_sections(blocks, info)
    for idx, h in enumerate(blocks):
        if h.line == skip_line:
            continue
        section, primary = info[idx]
        if section is None or (not primary and section in primary_present):
            continue
        # Nested inside a heading of the same section (seed "コンテキスト" > "1.1 背景"): already covered.
        if enclosing[idx] == section:
            continue
        end = len(lines)
        for j in range(idx + 1, len(blocks)):
            nxt = blocks[j]
            nsec, nprim = info[j]
            if nxt.level <= h.level:
                end = nxt.line
                break
            if nsec is not None and nsec != section and (nprim or nsec not in primary_present):
                end = nxt.line
                break
        body = "\n".join(lines[h.end : end]).strip("\n")
        if body.strip():
            found.setdefault(section, []).append(body.strip())
            spans.setdefault(section, []).append((h.end, end))
    texts = {name: "\n\n".join(found[name]) for name in SECTIONS if name in found}
    return texts, {name: spans[name] for name in texts}


def _enclosing_sections(blocks: list[Heading], info: list[tuple[str | None, bool]]) -> list[str | None]:
    """For each heading, the section of its nearest ancestor heading that maps to one (one pass)."""
    out: list[str | None] = []
    stack: list[tuple[int, str | None]] = []  # (level, nearest canonical section at or above it)
    for h, (section, _primary) in zip(blocks, info, strict=True):
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        above = stack[-1][1] if stack else None
        out.append(above)
        stack.append((h.level, section or above))
    return out


_PLAIN_SECTION_NUMBER = re.compile(r"^(?:§\s*)?\d+\.\d+")
# A list item's marker at a line start (bullets the seeds and Japanese docs use, and "1." / "1)").
BULLET = re.compile(r"^\s*(?:[-*+•●・◦▪]|\d+[.)])\s+")


def strip_list_marker(text: str) -> str:
    """The text without one leading list marker (`* `, `- `, `1. `, `・ `): a reader sees the marker
    as the list's bullet, not as words of the item, so a quote copied with it is the item's text."""
    return BULLET.sub("", text, count=1)


def scan_plain_headings(lines: list[str]) -> list[Heading]:
    """Headings of a plain-text export: short lines standing alone between blank lines."""
    out: list[Heading] = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or len(s) > 70:
            continue
        if i > 0 and lines[i - 1].strip():
            continue
        if i + 1 < len(lines) and lines[i + 1].strip():
            continue
        if BULLET.match(line) and not _PLAIN_SECTION_NUMBER.match(s):
            continue
        if s[-1] in "。．.:：、,;；!?！？|" or "|" in s:
            continue
        section, _primary = heading_section(s)
        if _PLAIN_SECTION_NUMBER.match(s) or s.startswith("§"):
            level = 2
        elif section is not None or heading_key(s) in META_HEADINGS:
            level = 1
        elif re.search(r"[.。]", s) and not re.search(r"\s[(（][^)）]*[)）]$", s):
            continue  # a short sentence, not a heading
        else:
            level = 1  # "判断基準 (Decision Drivers)", "参照 (References)", "Amendment: ..."
        out.append(Heading(i, i + 1, level, s, False))
    return out
