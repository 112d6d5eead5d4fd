"""The text a reader sees: an ADR as blocks of visible text, what a verbatim quote may be taken from.

`reader_blocks(adr)` is the interface (the citation and finding checks of issue 14 use it; the
summary is built from the same blocks, so an extractive quote of it is one of them by construction):

- a Markdown file (GitHub renders it) gives one block per heading, paragraph, list-item paragraph,
  table cell, code block and HTML block, in reading order. Inside a block the visible text is kept,
  code-span content included ("`<text>` 要素" stays "<text> 要素"); HTML comments, tags,
  `<script>`/`<style>`/`<template>` content, image alt text, link targets and emphasis markers are
  not visible and are left out. Nothing is joined across blocks, so a quote that spans two list
  items, or a paragraph and the code block after it, is in no block.
- its YAML front matter (GitHub shows it as a table) gives one block per key and per scalar value;
- a file that is not Markdown (the seeds' `.txt` exports, shown as they are) gives one block per
  blank-line separated paragraph, markup and all.

Whitespace inside a block is folded to single spaces (NFKC and CJK spacing are the matcher's
business). Past the parser's inline budget (see markdown.py) a block's inline markup is kept as
written; a file over the block budget has no blocks (it did not parse either).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from adr_review.core.adr.front_matter import FrontMatterRefused, split_front_matter, strip_front_matter
from adr_review.core.adr.markdown import Block, MarkdownTooComplex, Run, read_markdown
from adr_review.core.adr.model import Adr

ReaderKind = Literal["heading", "paragraph", "cell", "code", "html", "front_matter", "plain"]
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx", ".mdown", ".mkd")
_PLAIN_SUFFIXES = (".txt", ".text", ".rst", ".adoc")


@dataclass(frozen=True)
class ReaderBlock:
    text: str  # the visible text of one block, whitespace folded
    kind: ReaderKind
    section: str  # the visible text of the nearest heading above it ("" before the first one)
    line: int  # the block's first line in the whole document (Adr.text), 0-based


def is_markdown_path(path: str) -> bool:
    """GitHub renders these as Markdown; a known plain-text extension is shown as it is."""
    ext = posixpath.splitext(path.lower())[1]
    return ext in MARKDOWN_SUFFIXES or ext not in _PLAIN_SUFFIXES


def reader_blocks(adr: Adr) -> tuple[ReaderBlock, ...]:
    """The blocks of visible text of an ADR's whole document, in reading order (see the module doc)."""
    return text_reader_blocks(adr.text, markdown=is_markdown_path(adr.path))


@functools.lru_cache(maxsize=256)
def text_reader_blocks(text: str, *, markdown: bool = True) -> tuple[ReaderBlock, ...]:
    """`reader_blocks` of a document's text (cached: verification asks for the same ADRs often)."""
    if not markdown:
        return tuple(
            ReaderBlock(_fold(b.text), "plain", "", b.line) for b in plain_blocks(text) if _fold(b.text)
        )
    try:
        front, body, _lenient = split_front_matter(text)
    except FrontMatterRefused:
        front, body = {}, strip_front_matter(text)
    offset = text.count("\n", 0, len(text) - len(body))
    out = [ReaderBlock(v, "front_matter", "", 0) for v in _front_matter_texts(front)]
    try:
        blocks = read_markdown(body).blocks
    except MarkdownTooComplex:
        return tuple(out)
    section = ""
    for b in blocks:
        visible = _fold(b.text)
        if b.kind == "heading":
            section = visible
        if visible:
            out.append(ReaderBlock(visible, b.kind, section, b.line + offset))
    return tuple(out)


def _front_matter_texts(front: dict[str, Any]) -> Iterator[str]:
    def walk(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            for k, v in value.items():
                yield from walk(k)
                yield from walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                yield from walk(v)
        elif value is not None:
            s = _fold(str(value))
            if s:
                yield s

    yield from walk(front)


def plain_blocks(text: str) -> tuple[Block, ...]:
    """A plain-text file's blank-line separated paragraphs, as blocks (shown as written)."""
    out: list[Block] = []
    start: int | None = None
    lines = text.split("\n")
    for i, line in enumerate([*lines, ""]):
        if line.strip():
            start = i if start is None else start
        elif start is not None:
            out.append(Block("paragraph", start, i, (Run("\n".join(lines[start:i])),)))
            start = None
    return tuple(out)


_WS = re.compile(r"\s+")


def _fold(text: str) -> str:
    return _WS.sub(" ", text).strip()
