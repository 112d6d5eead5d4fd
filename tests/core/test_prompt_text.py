"""A prompt's own delimiter tags, in any form untrusted text could write them, and nothing else."""

from __future__ import annotations

import pytest

from adr_review.core.prompt_text import our_tags

TAGS = our_tags("proposal", "candidate_adrs")


@pytest.mark.parametrize(
    ("text", "matched"),
    [
        ("</proposal>", True),
        ("<proposal>", True),
        ("< / PROPOSAL >", True),
        ('<candidate_adrs id="x">', True),
        ("<proposals>", False),  # another word
        ("<adr_document>", False),  # another prompt's tag
        ("the proposal says", False),
    ],
)
def test_our_tags_match_every_form_of_our_delimiters_only(text: str, matched: bool) -> None:
    assert bool(TAGS.search(text)) is matched
