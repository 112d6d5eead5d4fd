"""Markdown structure, scanned by hand: headings (ATX, setext, and a plain-text export's bare heading
lines), fenced code, paragraphs, and inline markup reduced to plain text.

This module is the parser's block boundary: the rest of the package sees only `scan_headings`,
`strip_code`, `paragraphs`, `clean_inline`, `is_atx_heading` and `BULLET`, so the markdown-it-py
rewrite (issue 15) replaces this file and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.core.adr.model import Heading
from app.core.adr.sections import heading_key, heading_section
from app.core.adr.vocabulary import META_HEADINGS

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_PLAIN_SECTION_NUMBER = re.compile(r"^(?:§\s*)?\d+\.\d+")
# A list item's marker at a line start (bullets the seeds and Japanese docs use, and "1." / "1)").
BULLET = re.compile(r"^\s*(?:[-*+•●・◦▪]|\d+[.)])\s+")


def scan_headings(lines: list[str]) -> list[Heading]:
    """The document's headings: Markdown ones, or, when it has none, a plain-text export's."""
    blocks = _scan_markdown_headings(lines)
    if not any(h.markdown for h in blocks):
        blocks = _scan_plain_headings(lines)
    return blocks


def is_atx_heading(line: str) -> bool:
    return bool(_ATX.match(line))


def _scan_markdown_headings(lines: list[str]) -> list[Heading]:
    out: list[Heading] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        fm = _FENCE.match(line)
        if fm:
            mark = fm.group(1)
            if fence is None:
                fence = mark[0] * 3
            elif mark.startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        m = _ATX.match(line)
        if m and (m.group(2) or "").strip():
            out.append(Heading(i, i + 1, len(m.group(1)), m.group(2).strip(), True))
            continue
        if (
            i > 0
            and re.match(r"^ {0,3}(=+|-{2,})\s*$", line)
            and lines[i - 1].strip()
            and not _ATX.match(lines[i - 1])
            and not re.match(r"^\s*([-*+•|>]|\d+\.)", lines[i - 1])
            and (i < 2 or not lines[i - 2].strip())
        ):
            level = 1 if line.strip().startswith("=") else 2
            out.append(Heading(i - 1, i + 1, level, lines[i - 1].strip(), True))
    return out


def _scan_plain_headings(lines: list[str]) -> list[Heading]:
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


_CODE_FENCE_BLOCK = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.DOTALL | re.MULTILINE)


def strip_code(text: str) -> str:
    """The text without its fenced code blocks."""
    return _CODE_FENCE_BLOCK.sub("", text)


def paragraphs(lines: Iterable[str]) -> list[str]:
    """Blank-line separated paragraphs, code blocks and HTML comments removed."""
    text = strip_code("\n".join(lines))
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def clean_inline(text: str) -> str:
    """Inline Markdown as the plain text a reader sees: links, images, emphasis, tags and code marks
    removed, spaces folded."""
    s = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    s = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", s)  # images
    s = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", s)  # inline links
    s = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", s)  # reference links
    s = re.sub(r"\[\\?(#\d+)\]", r"\1", s)
    s = re.sub(r"<(https?://[^>]+)>", r"\1", s)
    s = re.sub(r"</?[a-zA-Z][^>]*>", "", s)  # html tags
    s = re.sub(r"(\*\*|__)(.+?)\1", r"\2", s)
    s = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", s)
    s = re.sub(r"(?<![\w])_(?!\s)(.+?)(?<!\s)_(?![\w])", r"\1", s)
    s = re.sub(r"`([^`]*)`", r"\1", s)
    s = s.replace("\\", "")
    return re.sub(r"[ \t]+", " ", s).strip()
