"""The offline embedder folds each chunk once (core.text.token_form), without the whitespace folding that cannot change its
n-gram streams, and counts n-grams without np.unique's generality: the vectors must be bit for bit
those of the plain definition (adr_review.core.text.normalize, np.unique, the hiragana filter always on)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adr_review.adapters.embeddings import (
    _CJK_RUN,
    _HIRAGANA,
    _OTHER_WORD,
    HashedNgramEmbedder,
    _fmix64,
)
from adr_review.core.chunking import chunk_text
from adr_review.core.text import normalize, token_form

CORPORA = Path(__file__).resolve().parents[1] / "fixtures" / "corpora"
TRICKY = [
    "Tabs\tand\n\nnew lines,  double  spaces\u00a0and NBSP",
    "zero\u200bwidth join\u200dme \ufeffBOM and word\u2060joiner",
    "ＦＵＬＬＷＩＤＴＨ ｶﾀｶﾅ and ① ligature ﬁne",
    "日本語の文章、そして English words_with_underscores 123",
    "   leading and trailing   ",
    "",
]


def by_definition(embedder: HashedNgramEmbedder, text: str) -> np.ndarray:
    folded = normalize(text)
    vec = np.zeros(embedder.dim)
    streams = (
        (_CJK_RUN.findall(folded), embedder.cjk_ngrams),
        (_OTHER_WORD.findall(folded), embedder.other_ngrams),
    )
    for stream, sizes in streams:
        if stream and sizes:
            vec += _stream(embedder.dim, " " + " ".join(stream) + " ", sizes)
    norm = float(np.linalg.norm(vec))
    return (vec / norm if norm > 0 else vec).astype(np.float32)


def _stream(dim: int, s: str, sizes: tuple[int, ...]) -> np.ndarray:
    codes = np.frombuffer(s.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    skip = (codes >= _HIRAGANA[0]) & (codes <= _HIRAGANA[1])
    space = codes == 32
    hashes = []
    for n in sizes:
        m = len(codes) - n + 1
        if m <= 0:
            continue
        h = np.zeros(m, dtype=np.uint64)
        for k in range(n):
            h = h * np.uint64(1_000_003) + codes[k : k + m]
        h = _fmix64(h + np.uint64((n * 0x9E3779B97F4A7C15) % (1 << 64)))
        window = np.ones(n, dtype=np.int64)
        hira = np.convolve(skip.astype(np.int64), window, "valid")
        hira_or_space = np.convolve((skip | space).astype(np.int64), window, "valid")
        hashes.append(h[~((hira_or_space == n) & (hira > 0))])
    if not hashes:
        return np.zeros(dim)
    features, counts = np.unique(np.concatenate(hashes), return_counts=True)
    if len(features) == 0:
        return np.zeros(dim)
    weights = 1.0 + np.log(counts.astype(np.float64))
    signs = np.where((features >> np.uint64(63)) & np.uint64(1), -1.0, 1.0)
    v = np.bincount((features % np.uint64(dim)).astype(np.int64), weights=signs * weights, minlength=dim)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


@pytest.mark.parametrize("text", TRICKY)
def test_folding_keeps_both_streams(text: str) -> None:
    assert _CJK_RUN.findall(token_form(text)) == _CJK_RUN.findall(normalize(text))
    assert _OTHER_WORD.findall(token_form(text)) == _OTHER_WORD.findall(normalize(text))


@pytest.mark.parametrize(
    "embedder",
    [
        HashedNgramEmbedder(),
        # n-gram sizes out of order, repeated, and longer than a short stream: each size's polynomial
        # extends the one before (Horner), so the order and the gaps must not matter
        HashedNgramEmbedder(cjk_ngrams=(3, 1), other_ngrams=(5, 3, 3, 9)),
        HashedNgramEmbedder(dim=64, cjk_ngrams=(), other_ngrams=(40, 2)),
    ],
    ids=["default", "unordered-repeated", "long-and-short"],
)
def test_vectors_equal_the_definition_bit_for_bit(embedder: HashedNgramEmbedder) -> None:
    texts = list(TRICKY)
    for path in sorted(CORPORA.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        texts += chunk_text(text, path.stem)
    got = embedder.embed(texts)
    expected = np.stack([by_definition(embedder, t) for t in texts])
    assert np.array_equal(got, expected)
