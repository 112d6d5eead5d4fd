"""Property-based tests (hypothesis): generated and adversarial Markdown through the ADR parser and the
sanitiser. The parser never hangs (a per-example time budget), never raises anything but a per-file
AdrParseError, and its summary is made of passages a reader sees; the rendered comment never contains
a live mention, an image or raw HTML from the input, checked on markdown-it-py tokens (what GitHub
builds), not on how the string looks."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from adr_review.core.adr import AdrParseError, parse_adr, reader_blocks
from adr_review.core.feedback_boxes import finding_ids
from adr_review.core.markdown_safe import sanitize_block, sanitize_code, sanitize_inline
from adr_review.core.render import render_comment
from adr_review.core.text import contains_verbatim
from tests.core.test_render import LINK_BASE, english_review
from tests.core.test_sanitize import DOLLAR_SPAN, assert_no_math

MD = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
PER_EXAMPLE_S = 3.0  # a generous bound on a shared machine; real files take milliseconds

# --- generated Markdown -----------------------------------------------------------------------------

_words = st.text(
    alphabet=st.characters(
        codec="utf-8",
        categories=("L", "N", "P", "S", "Zs"),
        include_characters="`*_[]()<>!#|~&\\-:：。、「」決定承認背景",
    ),
    max_size=40,
)
_snippets = st.sampled_from(
    [
        "## Status\n\nAccepted\n",
        "## Status\n\n未承認\n",
        "## Changelog\n\n* 15.06.2022: Proposed.\n* 28.06.2022: Accepted.\n",
        "* Status: Superceded by [3. Foo](0003-foo.md)\n",
        "Supercedes [1. Record](0001-record.md)\n",
        "## Decision\n\nWe use `<text>` 要素を配置し、\nwrap here.\n",
        "## Context\n\n> quoted guidance that is long enough to be skipped as a template note\n",
        "````\n```\n# not a heading\n```\n````\n",
        "<!-- ADR-0099 hidden -->\n",
        "<details><summary>ADR-0007</summary>\n\nbody\n\n</details>\n",
        "| Status | Accepted |\n|---|---|\n| Date | 2024-01-02 |\n",
        "[ref]: ./0004-bar.md\n\nsee [ref]\n",
        "MADR 4.0.0 and ADR-12 and `ADR-13`\n",
        "---\nstatus: &s accepted\nother: *s\ndate: 2024-13-45\nn: 123456789012345678901234567890\n---\n",
        "---\na: &a [x, y]\nb: &b [*a, *a, *a]\nstatus: *b\n---\n",
        "---\n: bad: [yaml\n---\n",
        "Title\n=====\n",
        "- [x] task\n  - nested\n    1. deep\n",
        "![img](http://x/i.png) <img src=x> <script>@evil</script>\n",
        "@octocat #123 GH-4 &#64;team\n",
        "\u202eevil\u200b \x01\x02",
        "日時: 2024年3月15日\n",
        "$\\Huge\\color{red}\\text{APPROVED}$\n",
        "$$\n\\Huge\\text{APPROVED}\n$$\n",
        "```math\n\\Huge x\n```\n",
        "$`\\Huge x`$ and \\$y$ and `$z$`\n",
    ]
)
_runs = st.builds(
    lambda ch, n: ch * n,
    st.sampled_from(list("`*_[]<>!#|~> \n-=\\($") + ["_a ", "![", "<!--", "[a](", "$x"]),
    st.integers(0, 3_000),
)
_headings = st.builds(lambda n, t: "#" * n + " " + t + "\n", st.integers(1, 7), _words)
_fences = st.builds(
    lambda ch, a, b, body: ch * a + "\n" + body + "\n" + ch * b + "\n",
    st.sampled_from(["`", "~"]),
    st.integers(2, 6),
    st.integers(0, 6),
    _words,
)
_lists = st.builds(
    lambda n, m, t: " " * n + m + " " + t + "\n",
    st.integers(0, 8),
    st.sampled_from(["-", "*", "1.", "•"]),
    _words,
)
_quotes = st.builds(lambda n, t: ">" * n + " " + t + "\n", st.integers(1, 25), _words)
_links = st.builds(
    lambda t, u: f"[{t}]({u})",
    _words,
    st.sampled_from(["0002-x.md", "../adr/0003-y.md", "http://e/x.md", "#a", "<0004 z.md>"]),
)
_fragment = st.one_of(_snippets, _words, _runs, _headings, _fences, _lists, _quotes, _links)
_documents = st.lists(st.tuples(_fragment, st.sampled_from(["", " ", "\n", "\n\n"])), max_size=30).map(
    lambda parts: "".join(f + sep for f, sep in parts)
)
_paths = st.sampled_from(
    [
        "0007-use-kafka.md",
        "adr-012-x.md",
        "2025-01-15-slug.md",
        "20260316-01-x.md",
        "0003-b/index.md",
        "002_da59eb14823afb63.txt",
    ]
)

# No example database: nothing is written into the checkout; each run draws new examples.
_PROPERTY = settings(
    max_examples=300,
    database=None,
    deadline=timedelta(seconds=PER_EXAMPLE_S),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_PROPERTY
@given(_documents, _paths)
def test_generated_markdown_parses_quickly_or_is_a_per_file_error(text: str, path: str) -> None:
    started = time.perf_counter()
    try:
        adr = parse_adr(path, text.encode("utf-8", "surrogatepass"))
    except AdrParseError as exc:
        assert exc.path == path and exc.reason
        return
    blocks = reader_blocks(adr)
    assert time.perf_counter() - started < PER_EXAMPLE_S
    assert adr.adr_id and adr.title and adr.summary
    assert len(adr.summary) <= 601 and len(adr.links) <= 200
    assert adr.status in ("proposed", "accepted", "deprecated", "superseded", "rejected", "unknown")
    if adr.summary != adr.title:
        # Every line of the summary is one passage a reader sees: quotes of it verify by construction.
        passages = [b.text for b in blocks]
        for line in adr.summary.split("\n"):
            piece = line.rstrip("…").strip()
            assert any(contains_verbatim(p, piece) for p in passages), (piece, passages[:20])


@settings(max_examples=60, database=None, deadline=timedelta(seconds=PER_EXAMPLE_S))
@given(st.binary(max_size=4_000), _paths)
def test_arbitrary_bytes_never_crash_the_parser(data: bytes, path: str) -> None:
    with contextlib.suppress(AdrParseError):
        parse_adr(path, data)


# --- the sanitiser, on markdown-it tokens -----------------------------------------------------------

MENTION = re.compile(r"(?<![\w/@`.])@[A-Za-z0-9]")
ISSUE_REF = re.compile(r"(?<![\w&])(#\d|GH-\d)", re.IGNORECASE)
_hostile = st.one_of(_documents, st.text(max_size=300))


def _flat(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for t in tokens:
        out.append(t)
        out.extend(_flat(t.children or []))
    return out


def _assert_inert(tokens: list[Token], allowed_html: frozenset[str] = frozenset()) -> None:
    flat = _flat(tokens)
    assert not [t for t in flat if t.type == "image"]
    html = [t.content.strip() for t in flat if t.type in ("html_inline", "html_block")]
    assert all(h in allowed_html or h.startswith(tuple(allowed_html or ("\0",))) for h in html), html
    for t in flat:
        if t.type == "text":
            assert not MENTION.search(t.content), t.content
            assert not ISSUE_REF.search(t.content), t.content


@settings(max_examples=120, database=None, deadline=timedelta(seconds=PER_EXAMPLE_S))
@given(_hostile)
def test_sanitised_text_is_inert_in_a_cell_a_block_and_a_code_span(text: str) -> None:
    started = time.perf_counter()
    cell = sanitize_inline(text)
    tokens = MD.parse(f"| a | b |\n|---|---|\n| {cell} | right |\n\nAFTER\n")
    assert sum(t.type == "td_open" for t in tokens) == 2
    _assert_inert(tokens, frozenset(DOLLAR_SPAN))
    assert_no_math(tokens)
    assert not [t for t in _flat(tokens) if t.type == "link_open"]
    block = sanitize_block(text)
    tokens = MD.parse(f"<details>\n<summary>S</summary>\n\n{block}\n\n</details>\n\nAFTER\n")
    assert [t.content.strip() for t in tokens if t.type == "html_block"] == [
        "<details>\n<summary>S</summary>",
        "</details>",
    ]
    _assert_inert(tokens, frozenset({"<details>", "</details>", *DOLLAR_SPAN}))
    assert_no_math(tokens)
    code = sanitize_code(text)
    tokens = MD.parse(f"path {code} end\n")
    kinds = {t.type for t in _flat(tokens)}
    assert not kinds & {"image", "html_inline", "link_open"}, kinds
    assert time.perf_counter() - started < PER_EXAMPLE_S


@settings(max_examples=40, database=None, deadline=timedelta(seconds=PER_EXAMPLE_S))
@given(_hostile)
def test_the_rendered_comment_is_inert_whatever_the_adr_and_model_say(text: str) -> None:
    r = english_review()
    assert r.recall is not None and r.blindspots is not None
    c = dataclasses.replace(r.recall.citations[0], title=text, relevance_reason=text)
    f = dataclasses.replace(r.blindspots.findings[0], title=text, quote=text, gap=text, suggested_action=text)
    review = dataclasses.replace(
        r,
        adr_title=text,
        recall=dataclasses.replace(r.recall, citations=(c,)),
        blindspots=dataclasses.replace(r.blindspots, findings=(f,), self_assessment=text),
    )
    for language in ("en", "ja"):
        tokens = MD.parse(render_comment(review, link_base=LINK_BASE, language=language))
        flat = _flat(tokens)
        assert not [t for t in flat if t.type == "image"]
        blocks = [t.content.strip() for t in tokens if t.type == "html_block"]
        assert all(h.startswith(("<!-- adr-review:v1", "<sub>", "<details", "</details>")) for h in blocks), (
            blocks
        )
        inline_html = {t.content for t in flat if t.type == "html_inline"}
        # the one HTML comment the body may hold: the checkbox tag of each shown finding, by its own id
        boxes = {
            f"<!-- adr-review:finding={i} -->"
            for i in finding_ids(review.adr_path, review.blindspots.findings)
        }
        assert inline_html <= {"<sub>", "</sub>", "<b>", "</b>", *DOLLAR_SPAN} | boxes, inline_html
        assert_no_math(tokens, trusted_dollars=1)
        hrefs = [str(t.attrGet("href")) for t in flat if t.type == "link_open"]
        assert all(h.startswith(LINK_BASE) for h in hrefs), hrefs
        for t in flat:
            if t.type == "text":
                assert not MENTION.search(t.content), t.content
                assert not ISSUE_REF.search(t.content), t.content
