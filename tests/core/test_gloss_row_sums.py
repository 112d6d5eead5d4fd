"""The query-against-matrix row sums skip the zero products (app/adr_review/core/gloss.py): the scores
must stay bit-identical to summing every entry, since the cross-language gates and ranks read them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from adr_review.core.gloss import _row_sums, _sparse_row_sums


@st.composite
def products_and_starts(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    sizes = draw(st.lists(st.integers(0, 12), min_size=0, max_size=40))
    n = sum(sizes)
    values = draw(
        st.lists(st.one_of(st.just(0.0), st.floats(2.0**-20, 16.0, width=32)), min_size=n, max_size=n)
    )
    starts = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))]).astype(np.int64)
    return np.asarray(values, dtype=np.float32), starts


@settings(max_examples=300, deadline=None)
@given(products_and_starts())
def test_summing_only_the_nonzero_products_is_bit_identical(case: tuple[np.ndarray, np.ndarray]) -> None:
    products, starts = case
    assert np.array_equal(_sparse_row_sums(products, starts), _row_sums(products, starts))


def test_a_long_matrix_with_few_hits_gives_the_same_bits() -> None:
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 60, size=5_000)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    products = rng.random(int(starts[-1]), dtype=np.float32) * (rng.random(int(starts[-1])) < 0.01)
    got, want = _sparse_row_sums(products, starts), _row_sums(products, starts)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.count_nonzero(want) > 100  # the case has hits to sum, not only zeros
