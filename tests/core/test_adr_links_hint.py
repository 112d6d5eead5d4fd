"""The link finder searches a text for relation phrases only when it holds one of RELATION_HINTS, and
for ADR mentions only in a line that holds "adr" (case-folded): so every match of those patterns must
contain a hint. Checked on the patterns themselves (each way a pattern can match has a run of literal
characters that contains a hint), and on the characters a case-insensitive pattern lets stand for a
hint's letters (each one's case folding contains that letter)."""

from __future__ import annotations

import re
import sys
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import pytest

from adr_review.core.adr import links
from adr_review.core.adr.vocabulary import RELATION_HINTS, RELATION_PHRASES

_MAX_VARIANTS = 64


def _hit(variants: list[str], hints: tuple[str, ...]) -> bool:
    return any(variants) and all(any(h in v.casefold() for h in hints) for v in variants)


def _requires(seq: Any, hints: tuple[str, ...]) -> bool:
    """Whether every match of this parsed sequence contains one of the hints."""
    variants = [""]  # the current run of literal characters, each way it can be spelled
    for op, av in seq:
        if op is sre.LITERAL:
            variants = [v + chr(av) for v in variants]
            continue
        if (
            op is sre.IN
            and all(o is sre.LITERAL for o, _c in av)
            and len(variants) * len(av) <= _MAX_VARIANTS
        ):
            variants = [v + chr(c) for v in variants for _o, c in av]
            continue
        if _hit(variants, hints):
            return True
        variants = [""]
        if op is sre.BRANCH and all(_requires(branch, hints) for branch in av[1]):
            return True
        if op is sre.SUBPATTERN and _requires(av[-1], hints):
            return True
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[0] >= 1 and _requires(av[2], hints):
            return True
    return _hit(variants, hints)


@pytest.mark.parametrize(("pattern", "kind", "where"), RELATION_PHRASES)
def test_every_relation_phrase_contains_a_hint(pattern: str, kind: str, where: str) -> None:
    assert _requires(sre_parse.parse(pattern), RELATION_HINTS), pattern


def test_every_mention_contains_the_hint() -> None:
    assert _requires(sre_parse.parse(links._ADR_MENTION.pattern), (links._MENTION_HINT,))


def test_a_pattern_without_the_hint_is_caught() -> None:  # the check itself can fail
    assert not _requires(sre_parse.parse(r"super[sc]eded|obsoleted\s+by"), RELATION_HINTS)
    assert not _requires(sre_parse.parse(r"(?:A|M)DR-\d+"), ("adr",))


def test_what_a_hint_letter_matches_case_insensitively_folds_to_it() -> None:
    letters = sorted({ch for hint in (*RELATION_HINTS, links._MENTION_HINT) for ch in hint if ch.isascii()})
    any_letter = re.compile(f"[{''.join(letters)}]", re.IGNORECASE)
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        if any_letter.fullmatch(ch):
            for letter in letters:
                if re.fullmatch(letter, ch, re.IGNORECASE):
                    assert letter in ch.casefold(), (letter, hex(cp))
