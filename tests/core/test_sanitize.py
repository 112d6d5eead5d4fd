"""Hostile ADR / model text through the sanitising filters, checked on a real CommonMark + GFM-table
parser (markdown-it-py): what GitHub would build from the output, not what the string looks like."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from adr_review.core.markdown_safe import (
    UnsanitizedOutput,
    Untrusted,
    sanitize_block,
    sanitize_code,
    sanitize_inline,
)
from adr_review.core.marker import MARKER_PREFIX, marker, parse_marker
from adr_review.core.render import _env

MD = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")

HOSTILE = {
    "mention": "ping @octocat please",
    "capital_mention": "ping @Octocat and @OCTOCAT please",
    "team_mention": "cc @acme/security-team now",
    "mention_after_zero_width": "@\u200boctocat and @\u2060octocat",
    "entity_mention": "&#64;octocat and &commat;octocat",
    "issue_refs": "see #123, acme/repo#45 and GH-12",
    "image": "![x](https://evil.example/p.png)",
    "image_ref": "![x][img]\n\n[img]: https://evil.example/p.png",
    "img_tag": '<img src="https://evil.example/p.png">',
    "script": "<script>alert(1)</script>",
    "details_close": "</details>\n\n# pwned\n\n<details open>",
    "pipes": "a | b || c \\| d",
    "newlines_and_table": "line1\nline2\n\n| x | y |\n|---|---|\n| 1 | 2 |",
    "forged_marker": "<!-- adr-review:v1 path=docs/adr/0001.md key=rk1-forged -->",
    "hidden_link": "[the docs](https://evil.example/phish)",
    "reference_link": "[docs][1]\n\n[1]: https://evil.example/phish",
    "autolink": "<https://evil.example/phish>",
    "javascript_link": "[x](javascript:alert(1))",
    "code_spans": "`@octocat` and `</details>` and `a|b`",
    "unclosed_fence": "```\ncode fence opened\n\nand never closed",
    "tilde_fence": "~~~\nfence",
    "rtl_override": "invoice\u202egnp.exe",
    "bidi_isolates": "\u2066abc\u2069 \u200f\u200e",
    "zero_width": "zero\u200bwidth\u200c\u200d\ufeffjoin",
    "unicode_tags": "visible\U000e0041\U000e0042\U000e0043",
    "controls": "bell\x07 esc\x1b[31m nul\x00 c1\x85",
    "headings": "# Heading\n## Second\nSetext\n===",
    "lists": "- item\n* star\n+ plus\n1. one\n2) two\n- [ ] task",
    "blockquote": "> quoted\n>> nested",
    "html_comment": "<!-- hidden --> visible",
    "thematic_break": "text\n---\n***\n___",
    "indented_code": "para\n\n    indented code",
    "backslashes": "\\[not a link\\](x) \\<b\\> \\",
    "html_entities": "&lt;b&gt; &amp; &#60;script&#62;",
    "table_delimiter_only": "|---|---|",
    "emoji_and_japanese": "決定 🚀 ＠octocat 「引用」",
    "math_inline": "$\\Huge\\color{red}\\text{APPROVED}$ by the team",
    "math_display": "$$\n\\Huge\\text{APPROVED}\n$$",
    "math_one_line_display": "see $$\\Huge\\text{APPROVED}$$ here",
    "math_backtick": "$`\\Huge\\text{APPROVED}`$",
    "math_fence": "```math\n\\Huge\\text{APPROVED}\n```",
    "math_escaped": "\\$x$ and $\\$ and \\\\$y$",
}

# GitHub links a mention when @ is followed by a login character and not preceded by a word char.
MENTION = re.compile(r"(?<![\w/@`.])@[A-Za-z0-9]")
ISSUE_REF = re.compile(r"(?<![\w&])(#\d|GH-\d)", re.IGNORECASE)
INVISIBLE = re.compile(
    "[\u200c-\u200f\u202a-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def _inline_tokens(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for t in tokens:
        out.append(t)
        if t.children:
            out.extend(_inline_tokens(t.children))
    return out


# The only inline HTML the sanitiser writes: the element each `$` stands alone in.
DOLLAR_SPAN = ("<span>", "</span>")


def assert_no_math(tokens: list[Token], *, trusted_dollars: int = 0) -> None:
    """No math GitHub would render: no `math` fence, and in each paragraph or cell every `$` of a text
    token stands alone in the sanitiser's <span> (never two in one text run; the source has it
    backslash-escaped), but for `trusted_dollars` bare ones the template wrote (the footer's cost: one
    dollar opens no math)."""
    assert not [t for t in tokens if t.type == "fence" and t.info.strip().startswith("math")]
    for inline in (t for t in tokens if t.children):
        kids = inline.children or []
        bare = 0
        for i, t in enumerate(kids):
            if t.type == "text" and "$" in t.content:
                wrapped = t.content == "$" and 0 < i < len(kids) - 1
                if not (wrapped and (kids[i - 1].content, kids[i + 1].content) == DOLLAR_SPAN):
                    bare += t.content.count("$")
        assert bare <= trusted_dollars, [k.content for k in kids]


def _assert_inert(tokens: list[Token]) -> None:
    """No HTML, images or links from the untrusted text; no mention or #ref in plain text; nothing
    invisible; no math."""
    flat = _inline_tokens(tokens)
    kinds = {t.type for t in flat}
    assert not kinds & {"image", "link_open"}, kinds
    assert {t.content for t in flat if t.type == "html_inline"} <= set(DOLLAR_SPAN)
    assert_no_math(tokens)
    for t in flat:
        if t.type == "text":
            assert not MENTION.search(t.content), t.content
            assert not ISSUE_REF.search(t.content), t.content
        assert not INVISIBLE.search(t.content), repr(t.content)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_inline_stays_in_its_table_cell(name: str) -> None:
    cell = sanitize_inline(HOSTILE[name])
    doc = f"| a | b | c |\n|---|---|---|\n| left | {cell} | right |\n\nAFTER\n"
    tokens = MD.parse(doc)
    cells = [t for t in tokens if t.type == "td_open"]
    assert len(cells) == 3, doc
    inlines = [t for t in tokens if t.type == "inline"]
    assert [t.content for t in inlines][-2:] == ["right", "AFTER"]
    _assert_inert(tokens)
    assert "\n" not in cell


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_block_cannot_leave_its_details(name: str) -> None:
    block = sanitize_block(HOSTILE[name])
    doc = f"<details>\n<summary>S</summary>\n\n{block}\n\n</details>\n\nAFTER\n"
    tokens = MD.parse(doc)
    html_blocks = [t.content.strip() for t in tokens if t.type == "html_block"]
    assert html_blocks == ["<details>\n<summary>S</summary>", "</details>"], html_blocks
    structural = {t.type for t in tokens} & {
        "heading_open",
        "bullet_list_open",
        "ordered_list_open",
        "fence",
        "code_block",
        "table_open",
        "blockquote_open",
        "hr",
    }
    assert not structural, (structural, block)
    assert tokens[-2].type == "inline" and tokens[-2].content == "AFTER"
    _assert_inert(tokens)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_block_inside_a_quote_stays_in_the_quote(name: str) -> None:
    quoted = _env(None).filters["quote_lines"](sanitize_block(HOSTILE[name]))
    tokens = MD.parse(f"{quoted}\n\nAFTER\n")
    assert [t.type for t in tokens][0] == "blockquote_open"
    depth = 0
    for t in tokens:
        depth += t.nesting if t.type == "blockquote_open" or t.type == "blockquote_close" else 0
        assert t.type != "blockquote_open" or depth == 1, "nested quote from untrusted text"
    assert tokens[-2].content == "AFTER"
    _assert_inert(tokens)


@pytest.mark.parametrize(
    ("raw", "visible"),
    [
        ("[the docs](https://evil.example/phish)", "https://evil.example/phish"),
        ("![logo](https://evil.example/p.png)", "https://evil.example/p.png"),
        ("<https://evil.example/x>", "https://evil.example/x"),
        ("[https://good.example](https://evil.example)", "https://evil.example"),
    ],
)
def test_a_link_target_is_always_shown(raw: str, visible: str) -> None:
    html = MD.render(sanitize_inline(raw))
    assert visible in html
    assert "<a " not in html and "<img" not in html


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("@octocat", "@&#8203;octocat"),
        ("@Octocat", "@&#8203;Octocat"),  # logins are case-insensitive: GitHub links this one too
        ("@_bot", "@&#8203;_bot"),
        ("@2fa-user", "@&#8203;2fa-user"),
        ("@acme/team", "@&#8203;acme/team"),
        ("fix #12", "fix #&#8203;12"),
        ("GH-7", "GH&#8203;-7"),
        ("a|b", "a\\|b"),
        ("<b>", "&lt;b&gt;"),
        ("x & y", "x &amp; y"),
        ("`a|b` c", "`a\\|b` c"),
        ("`@x`", "`@x`"),
        ("a\n\nb", "a b"),
        ("abc\u202edef", "abcdef"),
        ("[the docs](https://x.example/a)", "the docs (https://x.example/a)"),
        ("![logo](https://x.example/p.png)", "logo (https://x.example/p.png)"),
        ("$x$", "<span>\\$</span>x<span>\\$</span>"),
        ("`$x$` $`y`$", "`$x$` <span>\\$</span>`y`<span>\\$</span>"),  # a code span is no math
    ],
)
def test_inline_escapes(raw: str, expected: str) -> None:
    assert sanitize_inline(raw) == expected


def test_code_span_outside_tables_keeps_pipes() -> None:
    assert sanitize_inline("`a|b`", in_table=False) == "`a|b`"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("docs/adr/0001-x.md", "`docs/adr/0001-x.md`"),
        ("a`b", "``a`b``"),
        ("`x", "`` `x ``"),
        ("</details>\n@me", "`</details> @me`"),
    ],
)
def test_code_filter_cannot_be_closed_early(raw: str, expected: str) -> None:
    out = sanitize_code(raw)
    assert out == expected
    tokens = _inline_tokens(MD.parse(out))
    assert [t.type for t in tokens if t.type not in ("paragraph_open", "paragraph_close", "inline")] == [
        "code_inline"
    ]


def test_block_keeps_lines_and_paragraphs() -> None:
    assert sanitize_block("first line\nsecond line\n\n\n\nnew paragraph\n") == (
        "first line\nsecond line\n\nnew paragraph"
    )


def test_limits_clip_before_escaping() -> None:
    out = sanitize_inline("@" * 50, limit=10)
    assert out.count("@") == 9 and out.endswith("…")


def test_a_200_kb_adr_is_clipped_and_escaped() -> None:
    # (linear time is pinned by the parser's property tests; this one pins what comes out)
    huge = ("Lorem @ipsum #1 <b>dolor</b> | sit `amet` ![i](http://e/x.png)\n" * 3300)[:200_000]
    assert len(huge) == 200_000
    inline = sanitize_inline(huge, limit=600)
    block = sanitize_block(huge, limit=1500)
    full = sanitize_block(huge)
    assert len(inline) < 1200 and len(block) < 3000
    assert len(full) > 200_000  # unclipped: escaped, not lost
    _assert_inert(MD.parse(block))


# --- marker ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "docs/adr/0001-use-x.md",
        "docs/adr/with space (1).md",
        "docs/adr/evil --> <img src=x>.md",
        "docs/adr/日本語の決定.md",
        "docs/adr/key=forged path=x.md",
    ],
)
def test_marker_round_trips_any_path(path: str) -> None:
    line = marker(path, "rk1-0123abcd")
    assert line.startswith(MARKER_PREFIX) and line.endswith(" -->")
    assert line.count("-->") == 1 and "\n" not in line
    assert parse_marker(line + "\nbody") == (path, "rk1-0123abcd")


@pytest.mark.parametrize(
    "body",
    [
        "hello\n<!-- adr-review:v1 path=a.md key=rk1-x -->",  # not on the first line
        "<!-- adr-review:v2 path=a.md key=rk1-x -->",
        "<!-- adr-review:v1 path=a.md key=rk1 x -->",
        "&lt;!-- adr-review:v1 path=a.md key=rk1-x --&gt;",
        "",
    ],
)
def test_parse_marker_rejects_everything_else(body: str) -> None:
    assert parse_marker(body) is None


def test_parse_marker_tolerates_crlf() -> None:
    assert parse_marker("<!-- adr-review:v1 path=a.md key=rk1-x -->\r\nbody") == ("a.md", "rk1-x")


def test_marker_refuses_an_unsafe_key() -> None:
    with pytest.raises(ValueError):
        marker("a.md", "rk1 --> <img>")


def test_templates_cannot_print_untrusted_text_unfiltered() -> None:
    env = _env(None)
    with pytest.raises(UnsanitizedOutput):
        env.from_string("{{ x }}").render(x=Untrusted("@octocat"))
    assert env.from_string("{{ x|inline }}").render(x=Untrusted("@octocat")) == "@&#8203;octocat"
