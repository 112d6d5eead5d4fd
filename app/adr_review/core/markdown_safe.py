"""Untrusted text -> Markdown that is safe on GitHub's renderer, by construction.

Untrusted: anything that came from an ADR (titles, ids, paths, quoted reasons) or from a model
(findings, self-assessments, error messages). The renderer wraps each such string in `Untrusted`, and
its Jinja environment (`finalize=refuse_untrusted`) refuses to print an `Untrusted` value that did not
go through one of the sanitising filters in FILTERS (`inline`, `text`, `block`, `code`), so a template
cannot forget it.

What sanitising guarantees, on GitHub's renderer:
- no @-mentions of users or teams and no #123 / GH-123 cross-references (a zero-width space entity
  after the sigil; GitHub does not link mentions inside code spans, so those are left alone);
- no raw HTML (`<`, `>` and `&` become entities), hence no <img>, <script>, forged `<!-- marker -->`
  or `</details>`; no Markdown images or links (a link becomes "text (url)", so the target is shown);
- no breaking out of a table cell (pipes escaped, newlines folded) or of a block (line starts that
  open headings, lists, quotes, fences or tables are escaped; code spans never span lines);
- no invisible steering: bidi overrides, zero-width and other format characters, C0/C1 controls and
  Unicode tag characters are removed;
- no math: GitHub renders `$...$`, `$$...$$` and `` $`...`$ `` with MathJax (`$\\Huge\\color{red}
  \\text{APPROVED}$` would shout in the comment), so every `$` outside a code span is written
  `<span>\\$</span>`: escaped for a parser that reads delimiters in the source, alone in its element for
  one that looks for them in the rendered text (GitHub's own advice for a literal dollar sign). A
  ```` ```math ```` fence is a fence, and fences are escaped at a line start already.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_ZW_SPACE = "&#8203;"
# Characters removed outright: C0 controls except tab/newline, DEL, C1, soft hyphen, Arabic letter mark,
# Mongolian vowel separator, zero-width and bidi controls, word joiner and invisible operators,
# BOM, interlinear annotation, Hangul fillers, Unicode tags and variation selectors supplement.
_STRIP = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\u115f\u1160\u3164\uffa0"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_NEWLINES = re.compile("\r\n|[\r\u2028\u2029\x85]")
_WS = re.compile(r"\s+")
_LINK = re.compile(
    r"(!?)\[([^\[\]\n]{0,1000})\]\(\s*<?([^()\s<>]{0,2000})>?(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^<>\s]{1,2000})>", re.IGNORECASE)
_ESCAPES = {
    "\\": "\\\\",
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "[": "\\[",
    "]": "\\]",
    "|": "\\|",
    "`": "\\`",
    "$": "<span>\\$</span>",
}
_ESCAPE_RE = re.compile("[\\\\&<>\\[\\]|`$]")
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")
_ISSUE_REF = re.compile(r"#(?=\d)")
_GH_REF = re.compile(r"\b(GH)-(?=\d)", re.IGNORECASE)
_LINE_START = re.compile(r"^([#=+*_~-])")
_ORDERED = re.compile(r"^(\d{1,9})([.)])")


def clean(text: str) -> str:
    """Remove invisible and control characters; unify line breaks to \\n."""
    return _STRIP.sub("", _NEWLINES.sub("\n", text))


def clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"


def _code_spans(line: str) -> list[tuple[bool, str]]:
    """Split one line into (is_code, piece): a run of n backticks opens a code span closed by the next
    run of exactly n. Unmatched backticks stay text (and get escaped)."""
    out: list[tuple[bool, str]] = []
    buf: list[str] = []
    i, n = 0, len(line)
    while i < n:
        if line[i] != "`":
            buf.append(line[i])
            i += 1
            continue
        j = i
        while j < n and line[j] == "`":
            j += 1
        run = j - i
        k = j
        close = -1
        while k < n:
            if line[k] == "`":
                m = k
                while m < n and line[m] == "`":
                    m += 1
                if m - k == run:
                    close = k
                    break
                k = m
            else:
                k += 1
        if close == -1 or close == j:  # unmatched, or an empty span (not a code span in CommonMark)
            buf.append(line[i:j])
            i = j
            continue
        if buf:
            out.append((False, "".join(buf)))
            buf = []
        out.append((True, line[i : close + run]))
        i = close + run
    if buf:
        out.append((False, "".join(buf)))
    return out


def _delink(text: str) -> str:
    def link(m: re.Match[str]) -> str:
        bang, label, url = m.group(1), m.group(2).strip(), m.group(3)
        if bang:
            return f"{label or 'image'} ({url})" if url else label
        if not url or url == label:
            return label or url
        return f"{label} ({url})"

    return _AUTOLINK.sub(r"\1", _LINK.sub(link, text))


def _escape_text(text: str) -> str:
    text = _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], _delink(text))
    # References first: the mention entity itself contains "#8203".
    text = _ISSUE_REF.sub("#" + _ZW_SPACE, text)
    text = _GH_REF.sub(lambda m: m.group(1) + _ZW_SPACE + "-", text)
    return _MENTION.sub("@" + _ZW_SPACE, text)


def _escape_line(line: str, *, in_table: bool) -> str:
    parts = []
    for is_code, piece in _code_spans(line):
        if is_code:
            # Code spans render literally (no mentions, HTML or links); GFM splits table cells on `|`
            # even inside code, and `\|` there renders as `|`.
            parts.append(piece.replace("|", "\\|") if in_table else piece)
        else:
            parts.append(_escape_text(piece))
    return "".join(parts)


def sanitize_inline(text: str, limit: int | None = None, *, in_table: bool = True) -> str:
    """One line of untrusted text, safe anywhere inline (including a table cell)."""
    one_line = _WS.sub(" ", clip(clean(text), limit)).strip()
    return _escape_line(one_line, in_table=in_table)


def sanitize_block(text: str, limit: int | None = None) -> str:
    """Untrusted multi-line text as Markdown paragraphs: line breaks kept (GitHub shows them), blank
    lines separate paragraphs, and nothing at a line start can open a block construct."""
    lines = [ln.strip() for ln in clip(clean(text), limit).split("\n")]
    out: list[str] = []
    for ln in lines:
        if not ln:
            if out and out[-1] != "":
                out.append("")
            continue
        esc = _escape_line(_WS.sub(" ", ln), in_table=False)
        esc = _ORDERED.sub(r"\1\\\2", _LINE_START.sub(r"\\\1", esc))
        out.append(esc)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)


def sanitize_code(text: str, limit: int | None = None) -> str:
    """Untrusted text as one inline code span (paths, model names): a fence longer than any backtick
    run inside, so it cannot be closed early. Not for table cells (pipes would split the cell)."""
    one_line = _WS.sub(" ", clip(clean(text), limit)).strip()
    if not one_line:
        return ""
    longest = max((len(m) for m in re.findall(r"`+", one_line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


class Untrusted(str):
    """A string from an ADR or a model: must pass a sanitising filter before it is printed."""


class UnsanitizedOutput(RuntimeError):
    pass


def refuse_untrusted(value: Any) -> Any:
    """The Jinja `finalize` hook: an `Untrusted` value printed without a filter is an error."""
    if isinstance(value, Untrusted):
        raise UnsanitizedOutput(f"template printed an untrusted string without a filter: {value[:60]!r}")
    return value


def untrusted(text: str | None) -> Untrusted | None:
    return None if text is None else Untrusted(text)


def _quote_lines(s: Any) -> str:
    return "\n".join(("> " + ln) if ln else ">" for ln in str(s).split("\n"))


# The template filters; `quote_lines` only prefixes already sanitised text with "> ".
FILTERS: Mapping[str, Callable[..., str]] = {
    "inline": lambda s, limit=None: sanitize_inline(str(s), limit),
    "text": lambda s, limit=None: sanitize_inline(str(s), limit, in_table=False),
    "block": lambda s, limit=None: sanitize_block(str(s), limit),
    "code": lambda s, limit=None: sanitize_code(str(s), limit),
    "quote_lines": _quote_lines,
}
