"""The ADR parser reads Markdown as GitHub renders it (markdown-it-py tokens), and the text a reader
sees (`reader_blocks`) is what summaries and quotes come from; YAML front matter cannot blow up."""

from __future__ import annotations

import pytest

from adr_review.core.adr import AdrParseError, parse_adr, reader_blocks, text_reader_blocks
from adr_review.core.adr.markdown import MAX_INLINE_STEPS, plain_text, read_markdown
from adr_review.core.text import contains_verbatim


def _adr(text: str, path: str = "0001-x.md"):  # type: ignore[no-untyped-def]
    return parse_adr(path, text.encode())


# --- block structure ------------------------------------------------------------------------------


def test_a_heading_inside_a_four_backtick_fence_is_not_a_section() -> None:
    adr = _adr(
        "# Use X\n\n## Context\n\nWhy.\n\n````md\n```\n## Decision\n\nnot me\n```\n````\n\n## Decision\n\nReal one.\n"
    )
    assert adr.sections["decision"] == "Real one."
    assert "## Decision" in adr.sections["context"]  # the fence is part of the context, as written
    assert adr.summary == "Real one."


def test_an_indented_fence_closed_with_a_tab_does_not_swallow_the_rest() -> None:
    """cometbft adr-076: the old scanner read everything after this list item as code."""
    adr = _adr(
        "# T\n\n## Decision\n\n1. Run:\n\n   ```bash\n   git fetch spec\n\tgit merge spec\n\t```\n\n"
        "   Then push.\n\n## Consequences\n\nOne repo.\n"
    )
    assert adr.sections["consequences"] == "One repo."


def test_setext_headings_and_headings_in_quotes_are_headings() -> None:
    adr = _adr("Use Kafka\n=========\n\nContext\n-------\n\nWe need events.\n\n> ## Decision\n>\n> Kafka.\n")
    assert adr.title == "Use Kafka"
    assert adr.sections["context"] == "We need events."
    assert "Kafka." in adr.sections["decision"]


def test_plain_text_exports_keep_the_plain_heading_scan() -> None:
    adr = _adr(
        "ADR-0001: Plain export\n\nコンテキスト\n\n背景の説明。\n\n決定\n\nRedis を使う。\n", "export.txt"
    )
    assert adr.adr_id == "ADR-0001"
    assert adr.sections == {"context": "背景の説明。", "decision": "Redis を使う。"}


# --- the text a reader sees -----------------------------------------------------------------------


def test_code_span_content_is_kept_in_the_summary_and_the_reader_blocks() -> None:
    adr = _adr("# T\n\n## Decision\n\nSVG 内に `<text>` 要素を配置し、ローダーが抽出する。\n")
    assert adr.summary == "SVG 内に <text> 要素を配置し、ローダーが抽出する。"
    assert ("paragraph", adr.summary) in [(b.kind, b.text) for b in reader_blocks(adr)]


def test_passages_are_never_joined_across_blocks() -> None:
    adr = _adr(
        "# T\n\n## Decision\n\nWe adopt Kafka:\n\n- for orders\n- for payments\n\n```\nkafka-topics --create\n```\n\n"
        "And we keep the\nold queue for a month.\n"
    )
    blocks = [(b.kind, b.text) for b in reader_blocks(adr)]
    assert blocks[2:] == [
        ("paragraph", "We adopt Kafka:"),
        ("paragraph", "for orders"),
        ("paragraph", "for payments"),
        ("code", "kafka-topics --create"),
        ("paragraph", "And we keep the old queue for a month."),
    ]
    # One summary line per block: nothing the old parser added ("; ", ". ") between them.
    assert adr.summary.split("\n") == [
        "We adopt Kafka:",
        "for orders",
        "for payments",
        "And we keep the old queue for a month.",
    ]
    texts = [text for _kind, text in blocks]
    assert not any(contains_verbatim(t, "for payments kafka-topics") for t in texts)
    assert all(any(contains_verbatim(t, line) for t in texts) for line in adr.summary.split("\n"))


def test_html_comments_tags_and_images_are_not_visible() -> None:
    adr = _adr(
        "# T <!-- draft -->\n\n## Decision\n\nUse <b>Kafka</b> ![diagram](d.png) <!-- ADR-0009 is hidden -->now.\n\n"
        "<!--\nADR-0010 in a comment block\n-->\n\n<details><summary>Why</summary>\n\nBecause.\n\n</details>\n"
    )
    texts = [b.text for b in reader_blocks(adr)]
    assert adr.title == "T"
    assert adr.summary.split("\n") == ["Use Kafka now.", "Because."]
    assert not any("ADR-0009" in t or "ADR-0010" in t or "diagram" in t or "draft" in t for t in texts)
    assert "Why" in texts and "Because." in texts
    assert adr.links == ()


def test_front_matter_values_are_blocks_and_plain_files_are_their_paragraphs() -> None:
    blocks = text_reader_blocks("---\ntitle: Use Kafka\ntags: [events, kafka]\n---\n# Use Kafka\n")
    assert [(b.kind, b.text) for b in blocks] == [
        ("front_matter", "title"),
        ("front_matter", "Use Kafka"),
        ("front_matter", "tags"),
        ("front_matter", "events"),
        ("front_matter", "kafka"),
        ("heading", "Use Kafka"),
    ]
    assert blocks[-1].line == 4  # lines count from the top of the file, front matter included
    plain = text_reader_blocks("**Not** markup here\n`kept`\n\nsecond <!-- shown -->\n", markdown=False)
    assert [(b.kind, b.text, b.line) for b in plain] == [
        ("plain", "**Not** markup here `kept`", 0),
        ("plain", "second <!-- shown -->", 3),
    ]


def test_reference_definitions_and_autolinks_give_link_targets() -> None:
    adr = _adr(
        "# T\n\n## Context\n\nBuilds on [the store][store] and <https://example.com/x.md>; see\n[the old\nbus](0002-bus.md).\n\n"
        "[store]: ./0003-store.md\n[unused]: ./0009-unused.md\n"
    )
    assert [lk.target for lk in adr.links] == ["0003-store.md", "0002-bus.md"]


def test_plain_text_of_an_inline_string() -> None:
    assert plain_text("**Superseded** by [ADR-0045](./adr-045-x.md) `now` <!-- x -->") == (
        "Superseded by ADR-0045 now"
    )


# --- front matter ---------------------------------------------------------------------------------


BOMB = (
    "---\n"
    'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))
    + "status: *a8\n---\n# Title\n\n## Decision\n\nDo it.\n"
)


def test_a_yaml_alias_bomb_is_refused_with_a_clear_per_file_message() -> None:
    assert len(BOMB) < 1_000
    with pytest.raises(AdrParseError) as err:
        _adr(BOMB)
    assert err.value.path == "0001-x.md"
    assert "aliases" in err.value.reason and "billion-laughs" in err.value.reason


def test_modest_aliases_still_load() -> None:
    adr = _adr("---\nstatus: &s accepted\ntags: [*s, kafka]\n---\n# T\n\n## Decision\n\nx\n")
    assert adr.status == "accepted"
    assert adr.extra["tags"] == "accepted, kafka"


@pytest.mark.parametrize(
    ("front", "reason"),
    [
        ("a: &a [*a]", "recursive YAML alias"),
        ("a: " + "[" * 70 + "]" * 70, "nested more than 64 levels"),
    ],
)
def test_recursive_or_deeply_nested_front_matter_is_refused(front: str, reason: str) -> None:
    with pytest.raises(AdrParseError, match=reason):
        _adr(f"---\n{front}\n---\n# T\n")


def test_values_python_refuses_stay_strings() -> None:
    """A 5,000-digit integer and the date 2024-13-45 used to raise ValueError out of the parser."""
    adr = _adr(f"---\ndate: 2024-13-45\nid: {'1' * 5000}\nreview: 2024-02-30\n---\n# T\n\n## Decision\n\nx\n")
    assert adr.date is None or adr.date.startswith("2024")
    assert adr.extra["review"] == "2024-02-30"


def test_invalid_yaml_is_read_line_by_line_and_noted() -> None:
    adr = _adr("---\ntitle: [unclosed\nstatus: accepted\n---\n# Real title\n\n## Decision\n\nDo it.\n")
    assert adr.status == "accepted"
    assert any("not valid YAML" in n for n in adr.notes)


# --- the budget -----------------------------------------------------------------------------------


def test_markup_past_the_inline_budget_is_read_as_plain_text_and_noted() -> None:
    adr = _adr(
        "# T\n\n## Decision\n\nWe use **Kafka**.\n\n"
        + "*a " * (MAX_INLINE_STEPS * 2)
        + "\n\nLast **words**.\n"
    )
    assert adr.summary.startswith("We use Kafka.")
    assert any("read as plain text" in n for n in adr.notes)
    assert reader_blocks(adr)[-1].text == "Last **words**."  # past the budget: as written


def test_the_block_reader_is_cached_per_body() -> None:
    body = "# T\n\nOne paragraph.\n"
    assert read_markdown(body) is read_markdown(body)
