"""The query-against-matrix row sums skip the zero products (app/adr_review/core/gloss.py): the scores
must stay bit-identical to summing every entry, since the cross-language gates and ranks read them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from adr_review.core.gloss import (
    GlossParams,
    _query_row,
    _row_sums,
    _row_sums_at,
    passage_matrix,
    passage_scores,
)

Case = tuple[np.ndarray, np.ndarray, np.ndarray]


@st.composite
def vector_entries_and_starts(draw: st.DrawFn) -> Case:
    """A vector cut into rows, and the sorted entries passed on: every nonzero one and some zeros,
    as `passage_scores` passes the entries holding any of the query's features."""
    sizes = draw(st.lists(st.integers(0, 12), min_size=0, max_size=40))
    n = sum(sizes)
    values = draw(
        st.lists(st.one_of(st.just(0.0), st.floats(2.0**-20, 16.0, width=32)), min_size=n, max_size=n)
    )
    extra = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    vector = np.asarray(values, dtype=np.float32)
    starts = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))]).astype(np.int64)
    at = np.flatnonzero((vector != 0) | np.asarray(extra, dtype=bool))
    return vector, at, starts


@settings(max_examples=300, deadline=None)
@given(vector_entries_and_starts())
def test_summing_only_the_passed_entries_is_bit_identical(case: Case) -> None:
    vector, at, starts = case
    assert np.array_equal(_row_sums_at(vector[at], at, starts), _row_sums(vector, starts))


def test_a_long_matrix_with_few_hits_gives_the_same_bits() -> None:
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 60, size=5_000)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    vector = rng.random(int(starts[-1]), dtype=np.float32) * (rng.random(int(starts[-1])) < 0.01)
    at = np.flatnonzero(vector != 0)
    got, want = _row_sums_at(vector[at], at, starts), _row_sums(vector, starts)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.count_nonzero(want) > 100  # the case has hits to sum, not only zeros


def test_an_entry_left_out_changes_its_row() -> None:
    """The entries are positions, not a count: dropping a nonzero one must show in its row's sum."""
    vector = np.asarray([1.0, 2.0, 0.0, 4.0], dtype=np.float32)
    starts = np.asarray([0, 2, 4], dtype=np.int64)
    at = np.asarray([0, 3])
    assert _row_sums_at(vector[at], at, starts).tolist() == [1.0, 4.0]


@st.composite
def passages(draw: st.DrawFn, dims: int) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for _ in range(draw(st.integers(0, 8))):
        ids = sorted(draw(st.sets(st.integers(0, dims - 1), min_size=1, max_size=12)))
        counts = draw(st.lists(st.integers(1, 5), min_size=len(ids), max_size=len(ids)))
        out.append((np.asarray(ids, dtype=np.int64), np.asarray(counts, dtype=np.float32)))
    return out


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_passage_scores_equal_the_best_full_row_sum_bit_for_bit(data: st.DataObject) -> None:
    """Only the entries of features some query passage holds are summed; the scores must equal the
    best cosine summed over every entry of the matrix, for any query and any folder."""
    params = GlossParams(dims=64)
    docs = data.draw(st.lists(passages(64), min_size=1, max_size=6))
    query = data.draw(passages(64))
    matrix = passage_matrix(docs, params)
    want = np.zeros(len(matrix.owner), dtype=np.float64)
    for row in query:
        q = _query_row(row, matrix.weights, params.dims)
        np.maximum(want, _row_sums(q[matrix.ids] * matrix.values, matrix.starts), out=want)
    assert np.array_equal(passage_scores(query, matrix, params), want)
