"""Markdown structure from markdown-it-py tokens, read as GitHub renders it (CommonMark + GFM tables
and strikethrough), within a budget. The parser's one Markdown boundary.

The rest of the package sees `read_markdown(body) -> MarkdownDoc`: the leaf blocks in reading order
(each heading, paragraph, table cell, code block and HTML block, with its source lines) and, for
inline content, its runs of visible text, each marked as plain, code-span content or inside a link
(with the link's target; reference definitions are resolved by markdown-it). `plain_text(source)`
reads one short inline string (a metadata value) the same way. What is visible: text, code-span
content, link text, autolinks; not: HTML comments and tags, `<script>`/`<style>`/`<template>`
content, image alt text, link targets, emphasis markers.

The budget keeps any input up to the size limit linear and well under a second. markdown-it-py is
linear, but slow on some shapes (about 15 µs a character of `![`, 5 µs a token), so its work is
counted in its own units through two extension points: a block rule that never matches, put first
in every chain, is called at each block start and at each line a paragraph, list, quote or table
checks for its end (MAX_BLOCK_STEPS), and the block token list refuses more than MAX_BLOCK_TOKENS;
past either the file is refused (`MarkdownTooComplex`, a per-file error). Inline parsing has its
own count of parser positions (an inline rule first in its chain): once MAX_INLINE_STEPS are spent,
the remaining blocks' inline source is kept as plain text (`MarkdownDoc.degraded`), so a pathological
paragraph costs a bounded amount and the file is still read.
"""

from __future__ import annotations

import bisect
import functools
import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from adr_review.core.adr.model import Heading

MAX_LINES = 50_000
MAX_BLOCK_STEPS = 30_000
MAX_BLOCK_TOKENS = 64_000
MAX_INLINE_STEPS = 20_000
_BUDGET_KEY = "adr_review_budget"
_MAX_NESTING = 20  # markdown-it's commonmark preset
_QUOTE_MARKERS = re.compile(r"^[ \t]{0,3}>[ \t>]*", re.MULTILINE)

BlockKind = Literal["heading", "paragraph", "cell", "code", "html"]


class MarkdownTooComplex(ValueError):
    """The file would cost more than the block budget: refused with the reason, never a hang."""


@dataclass(frozen=True)
class Run:
    """A stretch of visible text: plain, the content of a code span, or (href) inside a link."""

    text: str
    code: bool = False
    href: str | None = None


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    line: int  # first source line, 0-based, of the text given to read_markdown
    end: int  # the line after the block
    runs: tuple[Run, ...]
    level: int = 0  # heading level
    quoted: bool = False  # inside a blockquote
    item: bool = False  # the first paragraph of a list item

    @property
    def text(self) -> str:
        """The visible text; soft and hard line breaks are "\\n"."""
        return "".join(r.text for r in self.runs)


@dataclass(frozen=True)
class MarkdownDoc:
    blocks: tuple[Block, ...]
    degraded: bool  # the inline budget ran out: later blocks' inline markup was read as plain text

    @functools.cached_property
    def headings(self) -> tuple[Heading, ...]:
        return tuple(
            Heading(b.line, b.end, b.level, _fold(b.text), True)
            for b in self.blocks
            if b.kind == "heading" and b.text.strip()
        )

    @functools.cached_property
    def _starts(self) -> list[int]:
        return [b.line for b in self.blocks]

    def between(self, start: int, end: int) -> tuple[Block, ...]:
        """The blocks that start on lines start..end-1 (a section's body)."""
        return self.blocks[bisect.bisect_left(self._starts, start) : bisect.bisect_left(self._starts, end)]

    def code_lines(self) -> set[int]:
        return {i for b in self.blocks if b.kind == "code" for i in range(b.line, b.end)}


class _Budget:
    def __init__(self) -> None:
        self.block_steps = 0
        self.inline_steps = 0


class _InlineBudgetSpent(Exception):
    pass


class _TokenList(list[Token]):
    """Block tokens, refusing to grow past MAX_BLOCK_TOKENS (a table row can push thousands)."""

    def append(self, token: Token) -> None:
        if len(self) >= MAX_BLOCK_TOKENS:
            raise MarkdownTooComplex(f"more than {MAX_BLOCK_TOKENS:,} Markdown blocks")
        super().append(token)


def _count_block_step(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    budget: _Budget = state.env[_BUDGET_KEY]
    budget.block_steps += 1
    if budget.block_steps > MAX_BLOCK_STEPS:
        raise MarkdownTooComplex(
            f"Markdown structure too complex (more than {MAX_BLOCK_STEPS:,} block steps)"
        )
    return False


def _count_inline_step(state: StateInline, silent: bool) -> bool:
    budget: _Budget = state.env[_BUDGET_KEY]
    budget.inline_steps += 1
    if budget.inline_steps > MAX_INLINE_STEPS:
        raise _InlineBudgetSpent
    return False


@functools.cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    md.block.ruler.before(
        "table",
        "adr_review_budget",
        _count_block_step,
        {"alt": ["paragraph", "reference", "blockquote", "list"]},
    )
    md.inline.ruler.before("text", "adr_review_budget", _count_inline_step)
    # Link labels are scanned through skipToken, mostly from its cache, without calling any rule:
    # those scans are counted too (on this instance only).
    skip = md.inline.skipToken

    def counted_skip(state: StateInline) -> None:
        _count_inline_step(state, True)
        skip(state)

    md.inline.skipToken = counted_skip  # type: ignore[method-assign]
    return md


@functools.lru_cache(maxsize=16)
def read_markdown(body: str) -> MarkdownDoc:
    """The leaf blocks of `body` (newlines already "\\n"); raises MarkdownTooComplex past the budget."""
    lines = body.count("\n") + 1
    if lines > MAX_LINES:
        raise MarkdownTooComplex(f"more than {MAX_LINES:,} lines ({lines:,})")
    md = _parser()
    budget = _Budget()
    # Each level of a nested blockquote scans all its lines again, inside one rule call: charged up
    # front, one step per quote marker at a line start (what those scans cost).
    budget.block_steps = sum(min(m.group(0).count(">"), _MAX_NESTING) for m in _QUOTE_MARKERS.finditer(body))
    if budget.block_steps > MAX_BLOCK_STEPS:
        raise MarkdownTooComplex(f"blockquotes nested too deeply ({budget.block_steps:,} quote markers)")
    env: dict[str, Any] = {_BUDGET_KEY: budget}
    tokens = _TokenList()
    md.block.parse(body, md, env, tokens)
    return _walk(md, tokens, env)


def plain_text(source: str, limit: int = 600) -> str:
    """One short inline string (a metadata value, a status line) as a reader sees it, folded."""
    md = _parser()
    budget = _Budget()
    children: list[Token] = []
    try:
        md.inline.parse(source[:limit], md, {_BUDGET_KEY: budget}, children)
    except _InlineBudgetSpent:
        return _fold(source[:limit])
    return _fold("".join(r.text for r in _runs(children)))


def _walk(md: MarkdownIt, tokens: list[Token], env: dict[str, Any]) -> MarkdownDoc:
    out: list[Block] = []
    degraded = False
    quotes = 0
    pending_item = False
    kind: BlockKind = "paragraph"
    level = 0
    heading_map: list[int] | None = None
    for tok in tokens:
        t = tok.type
        if t == "blockquote_open":
            quotes += 1
        elif t == "blockquote_close":
            quotes -= 1
        elif t == "list_item_open":
            pending_item = True
        elif t == "heading_open":
            kind, level = "heading", int(tok.tag[1:])
            heading_map = tok.map
        elif t in ("th_open", "td_open"):
            kind = "cell"
        elif t == "inline":
            runs: tuple[Run, ...]
            if degraded or not _INLINE_MARKUP.search(tok.content):
                runs = (Run(tok.content),) if tok.content else ()
            else:
                try:
                    children: list[Token] = []
                    md.inline.parse(tok.content, md, env, children)
                    runs = _runs(children)
                except _InlineBudgetSpent:
                    degraded = True
                    runs = (Run(tok.content),)
            span = heading_map if kind == "heading" else tok.map
            line, end = (span[0], span[1]) if span else (0, 0)
            out.append(Block(kind, line, end, runs, level, quotes > 0, pending_item and kind == "paragraph"))
            pending_item = False
            kind, level = "paragraph", 0
        elif t in ("fence", "code_block"):
            pending_item = False
            line, end = tok.map or (0, 0)
            out.append(Block("code", line, end, (Run(tok.content, code=True),), 0, quotes > 0))
        elif t == "html_block":
            pending_item = False
            line, end = tok.map or (0, 0)
            visible = html_visible_text(tok.content)
            if visible.strip():
                out.append(Block("html", line, end, (Run(visible),), 0, quotes > 0))
    return MarkdownDoc(tuple(out), degraded)


# Characters that can start inline markup (markdown-it's text rule stops at these, and at others that
# only matter next to them): content without any is one plain run, no parse needed.
_INLINE_MARKUP = re.compile(r"[\n!&*<>\[\]\\_`~]")
_HIDDEN_OPEN = re.compile(r"<(script|style|template)\b", re.IGNORECASE)
_HIDDEN_CLOSE = re.compile(r"</(script|style|template)\s*>", re.IGNORECASE)


def _runs(children: Iterable[Token]) -> tuple[Run, ...]:
    """Inline tokens -> runs of visible text (adjacent runs of one kind merged)."""
    out: list[Run] = []
    hrefs: list[str | None] = []
    hidden = 0

    def add(text: str, code: bool = False) -> None:
        href = hrefs[-1] if hrefs else None
        if out and out[-1].code == code and out[-1].href == href:
            out[-1] = Run(out[-1].text + text, code, href)
        elif text:
            out.append(Run(text, code, href))

    for c in children:
        t = c.type
        if t == "html_inline":
            if _HIDDEN_OPEN.match(c.content):
                hidden += 1
            elif _HIDDEN_CLOSE.match(c.content):
                hidden = max(0, hidden - 1)
            elif c.content[:3].lower() == "<br":
                add("\n")
            continue
        if hidden:
            continue
        if t in ("text", "text_special"):
            add(c.content)
        elif t == "code_inline":
            add(c.content, code=True)
        elif t in ("softbreak", "hardbreak"):
            add("\n")
        elif t == "link_open":
            href = c.attrs.get("href")
            hrefs.append(unquote(str(href)) if href is not None else None)
        elif t == "link_close" and hrefs:
            hrefs.pop()
        # image (its alt text is not shown), emphasis and strikethrough markers: nothing of their own
    return tuple(out)


# Raw HTML: comments and hidden elements removed, tags removed (a block tag ends a line). The tag
# pattern stops at the next "<" so that "<a<a<a..." stays linear.
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_HIDDEN_ELEMENT = re.compile(
    r"<(script|style|template)\b[^<>]*>.*?(?:</\1\s*>|\Z)", re.DOTALL | re.IGNORECASE
)
_TAG = re.compile(r"</?([a-zA-Z][a-zA-Z0-9-]*)\b[^<>]*>")
_INLINE_TAGS = frozenset(
    {
        *("a", "abbr", "b", "bdi", "bdo", "cite", "code", "del", "dfn", "em", "i", "ins", "kbd", "mark"),
        *("q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var"),
        *("wbr", "img"),
    }
)


def html_visible_text(source: str) -> str:
    """What GitHub shows of a raw HTML block; block-level tags become line breaks."""
    s = _HIDDEN_ELEMENT.sub("\n", _COMMENT.sub("", source))
    s = _TAG.sub(lambda m: "" if m.group(1).lower() in _INLINE_TAGS else "\n", s)
    return html.unescape(s).strip()


_WS = re.compile(r"\s+")


def _fold(text: str) -> str:
    return _WS.sub(" ", text).strip()
