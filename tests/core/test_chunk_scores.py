"""A document's dense score from its chunks' cosines: the best chunk, or the soft maximum."""

from __future__ import annotations

import math

import numpy as np
import pytest

from adr_review.core.chunk_scores import chunk_scores


def _scores(docs: list[list[float]], t: float) -> list[float]:
    offsets = np.cumsum([0] + [len(d) for d in docs])
    return chunk_scores(np.asarray([c for d in docs for c in d], dtype=np.float32), offsets, t).tolist()


DOCS = [[0.3], [0.1, 0.5, 0.2], [0.5] * 4, [-0.2, -0.1], [0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]


def test_temperature_zero_is_the_best_chunk() -> None:
    assert _scores(DOCS, 0.0) == pytest.approx([max(d) for d in DOCS])


@pytest.mark.parametrize("t", [0.005, 0.02, 0.1, 1.0])
def test_soft_maximum_properties(t: float) -> None:
    got = _scores(DOCS, t)
    for doc, score in zip(DOCS, got, strict=True):
        assert min(doc) - 1e-6 <= score <= max(doc) + 1e-6  # between the worst and the best chunk
    assert got[0] == pytest.approx(0.3)  # one chunk: its cosine
    assert got[2] == pytest.approx(0.5)  # equally matching chunks: that cosine
    # the same best chunk among more non-matching ones scores lower
    assert got[4] < _scores([[0.5, 0.0]], t)[0] < 0.5


def test_one_matching_chunk_among_n_costs_about_t_log_n() -> None:
    t, n = 0.02, 8
    assert _scores([[0.5] + [0.0] * (n - 1)], t)[0] == pytest.approx(0.5 - t * math.log(n), abs=1e-6)


def test_large_temperature_tends_to_the_mean() -> None:
    assert _scores([[0.1, 0.5, 0.2]], 100.0)[0] == pytest.approx(0.8 / 3, abs=1e-3)


def test_no_overflow_at_small_temperatures() -> None:
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        assert _scores([[0.99, -0.99, 0.5]], 1e-4)[0] == pytest.approx(0.99 - 1e-4 * math.log(3), abs=1e-6)


def test_negative_temperature_is_refused() -> None:
    with pytest.raises(ValueError):
        _scores(DOCS, -0.1)
