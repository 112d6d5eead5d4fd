"""`is_japanese` counts in C (str.isalpha over the text and over its CJK runs); it must answer exactly
what the per-character definition answers: the share of kana/kanji among the letters."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adr_review.core.text import _is_cjk, is_japanese

CORPORA = Path(__file__).resolve().parents[1] / "fixtures" / "corpora"


def by_definition(text: str, threshold: float = 0.15) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return False
    return sum(1 for ch in letters if _is_cjk(ch)) / len(letters) >= threshold


def test_every_code_point_counts_as_the_definition_says() -> None:
    for cp in range(0x30000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        # one letter alone: Japanese iff it is a CJK letter; with a Latin letter: the share is 1/2
        assert is_japanese(ch, 1.0) is by_definition(ch, 1.0), hex(cp)
        assert is_japanese(ch + "a", 0.5) is by_definition(ch + "a", 0.5), hex(cp)


@pytest.mark.parametrize("seed", range(5))
def test_random_mixtures_agree_with_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [chr(c) for c in [*range(0x20, 0x250), *range(0x3000, 0x3100), *range(0x4E00, 0x4E40)]]
    alphabet += [
        "\u00b2",
        "\u0301",
        "\u3005",
        "\u30fb",
        "\u30fc",
        "\uff21",
        "\uac00",
        "\U00020001",
        "\U0001d400",
    ]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        threshold = rng.choice([0.0, 0.15, 0.5, 1.0])
        assert is_japanese(text, threshold) is by_definition(text, threshold), text


def test_the_fixture_corpora_are_classified_as_before() -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted(CORPORA.rglob("*.md"))]
    assert any(by_definition(t) for t in texts) and not all(by_definition(t) for t in texts)
    for text in texts:
        assert is_japanese(text) is by_definition(text)
        assert is_japanese(text[:4000]) is by_definition(text[:4000])
