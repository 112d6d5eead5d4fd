"""Heading text -> canonical section (through the vocabulary), and each section's body text."""

from __future__ import annotations

import functools
import re

from app.core.adr.model import Heading
from app.core.adr.vocabulary import FALLBACK_HEADINGS, SECTION_HEADINGS, SECTIONS

_NUMBERING = re.compile(r"^(?:§\s*)?(?:\d+(?:\.\d+)*\.?|[ivx]+\.|[a-z]\))\s+", re.IGNORECASE)
_GLOSS = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")
_COMPOUND = re.compile(r"[・/／&＆、,]|\s+and\s+|と(?=[^\x00-\x7f])")


@functools.lru_cache(maxsize=4096)
def heading_key(text: str) -> str:
    """The lookup key of a heading: numbering, glosses, emphasis, "[optional]" and case removed."""
    s = re.sub(r"<!--.*?-->", "", text)
    s = re.sub(r"[*_`]", "", s).strip()
    s = s.replace("：", ":").rstrip(":").strip()
    s = s.lstrip("§").strip()
    s = _NUMBERING.sub("", s)
    prev = None
    while prev != s:
        prev = s
        s = _GLOSS.sub("", s).strip()
    s = re.sub(r"^\[?(optional|オプション)\]?\s*", "", s, flags=re.IGNORECASE)
    s = re.sub(r"\s*\[optional\]$", "", s, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", s).casefold().strip(" .:-")


@functools.lru_cache(maxsize=4096)
def heading_section(text: str) -> tuple[str | None, bool]:
    """(canonical section, is_primary) for a heading text; "背景・課題" counts as its first part."""
    key = heading_key(text)
    for k in (key, _COMPOUND.split(key, maxsplit=1)[0].strip()):
        if k in SECTION_HEADINGS:
            return SECTION_HEADINGS[k], True
        if k in FALLBACK_HEADINGS:
            return FALLBACK_HEADINGS[k], False
    return None, False


def extract_sections(lines: list[str], blocks: list[Heading], *, skip_line: int | None) -> dict[str, str]:
    """Canonical section -> its text; a fallback heading counts only when no primary one is present."""
    primary_present: set[str] = set()
    for h in blocks:
        sec, prim = heading_section(h.text)
        if sec is not None and prim:
            primary_present.add(sec)
    found: dict[str, list[str]] = {}
    enclosing = _enclosing_sections(blocks)
    for idx, h in enumerate(blocks):
        if h.line == skip_line:
            continue
        section, primary = heading_section(h.text)
        if section is None or (not primary and section in primary_present):
            continue
        # Nested inside a heading of the same section (seed "コンテキスト" > "1.1 背景"): already covered.
        if enclosing[idx] == section:
            continue
        end = len(lines)
        for j in range(idx + 1, len(blocks)):
            nxt = blocks[j]
            nsec, nprim = heading_section(nxt.text)
            if nxt.level <= h.level:
                end = nxt.line
                break
            if nsec is not None and nsec != section and (nprim or nsec not in primary_present):
                end = nxt.line
                break
        body = "\n".join(lines[h.end : end]).strip("\n")
        if body.strip():
            found.setdefault(section, []).append(body.strip())
    return {name: "\n\n".join(found[name]) for name in SECTIONS if name in found}


def _enclosing_sections(blocks: list[Heading]) -> list[str | None]:
    """For each heading, the section of its nearest ancestor heading that maps to one (one pass)."""
    out: list[str | None] = []
    stack: list[tuple[int, str | None]] = []  # (level, nearest canonical section at or above it)
    for h in blocks:
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        above = stack[-1][1] if stack else None
        out.append(above)
        stack.append((h.level, heading_section(h.text)[0] or above))
    return out
