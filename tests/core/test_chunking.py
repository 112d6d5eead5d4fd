"""Section-aware chunks: whole short ADRs, heading cuts, packing, hard limits, title prefixes."""

from __future__ import annotations

import pytest

from adr_review.core.chunking import ChunkParams, chunk_text

P = ChunkParams(target=300, maximum=500)


def section(name: str, n: int) -> str:
    return f"## {name}\n\n" + " ".join(f"{name.lower()}{i}" for i in range(n))


def test_a_short_adr_is_one_chunk() -> None:
    text = "# Use Kafka\n\n## Context\n\nShort."
    assert chunk_text(text, "Use Kafka", P) == [text]


def test_chunks_cut_at_headings_and_cover_every_section_in_order() -> None:
    text = "# Title\n\n" + "\n\n".join(section(n, 30) for n in ("Context", "Decision", "Consequences"))
    chunks = chunk_text(text, "Title", P)
    assert len(chunks) >= 3
    joined = "\n".join(chunks)
    for name in ("Context", "Decision", "Consequences"):
        assert f"## {name}" in joined
    assert joined.index("## Context") < joined.index("## Decision") < joined.index("## Consequences")


def test_later_chunks_are_prefixed_with_the_title() -> None:
    text = "# Title\n\n" + "\n\n".join(section(n, 30) for n in ("Context", "Decision"))
    chunks = chunk_text(text, "Title", P)
    assert chunks[0].startswith("# Title")
    assert all(c.startswith("Title\n\n") for c in chunks[1:])
    assert not any(
        c.startswith("Title\n\n") for c in chunk_text(text, "Title", ChunkParams(300, 500, False))[1:]
    )


def test_small_sections_are_packed_together() -> None:
    text = "# T\n\n" + "\n\n".join(section(f"S{i}", 3) for i in range(8)) + "\n\n" + section("Tail", 60)
    chunks = chunk_text(text, "", P)
    assert len(chunks) < 9
    assert "## S0" in chunks[0] and "## S1" in chunks[0]


@pytest.mark.parametrize(
    "body",
    [
        "word " * 400,  # one huge paragraph of words
        "\n".join(f"line {i} " * 8 for i in range(120)),  # many lines, no blank line
        "x" * 3000,  # no whitespace at all
        "\n\n".join(f"para {i} " * 20 for i in range(30)),  # many paragraphs
    ],
)
def test_no_chunk_exceeds_the_maximum_plus_title(body: str) -> None:
    text = "# T\n\n## Context\n\n" + body
    chunks = chunk_text(text, "T", P)
    assert all(len(c) <= P.maximum + len("T\n\n") for c in chunks)
    # nothing is lost: without the title prefixes and whitespace, the chunks are the text
    stripped = [chunks[0]] + [c.removeprefix("T\n\n") for c in chunks[1:]]
    assert "".join("".join(stripped).split()) == "".join(text.split())


def test_front_matter_stays_with_the_first_section() -> None:
    text = "---\nid: ADR-1\nstatus: accepted\n---\n# Title\n\n" + section("Context", 80)
    chunks = chunk_text(text, "Title", P)
    assert chunks[0].startswith("---\nid: ADR-1")


def test_empty_text_has_no_chunks() -> None:
    assert chunk_text("   \n", "T", P) == []


def test_params_key_changes_with_every_knob() -> None:
    keys = {
        ChunkParams().key(),
        ChunkParams(target=1000).key(),
        ChunkParams(maximum=9000).key(),
        ChunkParams(title_prefix=False).key(),
    }
    assert len(keys) == 4
