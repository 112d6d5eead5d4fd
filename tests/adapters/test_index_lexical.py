"""BM25 from the cached term counts: the very scores rank-bm25's BM25Okapi gives for the tokenised
texts (what the index computed before the counts were cached), on the fixture corpora; and a process
counts only the ADRs the cache lacks."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from adr_review.adapters import lexical_cache
from adr_review.adapters.adr_files import load_adr_folder
from adr_review.adapters.array_file import read_arrays, write_arrays
from adr_review.adapters.index import ChromaAdrIndex
from adr_review.core.adr import Adr
from adr_review.core.lexical import TermCounts
from adr_review.core.text import search_tokens

CORPORA = Path(__file__).resolve().parents[1] / "fixtures" / "corpora"


def fixture_adrs() -> list[Adr]:
    adrs: list[Adr] = []
    for corpus in sorted(p for p in CORPORA.iterdir() if p.is_dir()):
        found, errors = load_adr_folder(corpus)
        assert not errors
        adrs += [_with_path(a, f"{corpus.name}/{a.path}") for a in found]
    return adrs


def _with_path(adr: Adr, path: str) -> Adr:
    import dataclasses

    return dataclasses.replace(adr, path=path)


@pytest.fixture(scope="module")
def adrs() -> list[Adr]:
    return fixture_adrs()


def queries(adrs: list[Adr]) -> list[tuple[str, str]]:
    """(proposal path, query text): the ADRs themselves as proposals, in both languages."""
    picks = [a for i, a in enumerate(adrs) if i % 5 == 0]
    assert any(a.language == "ja" for a in picks) and any(a.language == "en" for a in picks)
    return [(a.path, a.text) for a in picks]


def test_bm25_from_cached_counts_equals_rank_bm25_on_the_fixture_corpora(
    adrs: list[Adr], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    ChromaAdrIndex(store, "corpora").sync(adrs)  # counts the texts once and caches the counts
    index = ChromaAdrIndex(store, "corpora")  # another process: loads the counts
    index.sync(adrs)
    lexical = index.lexical()
    tokens = [search_tokens(a.text) for a in adrs]
    whole = BM25Okapi(tokens)
    for path, text in queries(adrs):
        q = search_tokens(text)
        np.testing.assert_allclose(lexical.scores(q).bm25, whole.get_scores(q), rtol=1e-12, atol=1e-12)
        # a review's scope: every ADR but the proposal (statistics of that pool, as BM25 over it)
        scope = [i for i, a in enumerate(adrs) if a.path != path]
        expected = BM25Okapi([tokens[i] for i in scope]).get_scores(q)
        got = lexical.scores(q, scope).bm25
        np.testing.assert_allclose(got[scope], expected, rtol=1e-12, atol=1e-12)
        # an evaluation's pool: the ADRs before the proposal
        pool = list(range(0, len(adrs), 3))
        expected = BM25Okapi([tokens[i] for i in pool]).get_scores(q)
        np.testing.assert_allclose(lexical.scores(q, pool).bm25[pool], expected, rtol=1e-12, atol=1e-12)


def test_cached_counts_give_the_very_arrays_of_a_fresh_count(adrs: list[Adr], tmp_path: Path) -> None:
    path = tmp_path / "lexical.arrays"
    lexical_cache.term_counts(adrs[::2], path)  # a cache of half the folder, another order
    counts = lexical_cache.term_counts(list(reversed(adrs)), path)
    fresh = TermCounts.of(a.text for a in reversed(adrs))
    assert counts.vocab == fresh.vocab
    for name in ("offsets", "terms", "counts"):
        assert np.array_equal(getattr(counts, name), getattr(fresh, name))


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many texts each TermCounts.of call is given, from now on."""
    seen: list[int] = []
    real = TermCounts.of.__func__  # type: ignore[attr-defined]

    def counting(cls: type[TermCounts], texts: Iterable[str]) -> TermCounts:
        listed = list(texts)
        seen.append(len(listed))
        return real(cls, listed)

    monkeypatch.setattr(TermCounts, "of", classmethod(counting))
    return seen


def test_rows_counted_elsewhere_are_used_and_give_the_arrays_of_a_fresh_count(
    adrs: list[Adr], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`counted` rows (the parse workers' shares) stand in for counting, in any order and split."""
    half = len(adrs) // 2
    shares = [adrs[half:], adrs[:half:2]]  # two shares, not in folder order, some ADRs in neither
    counted = [([a.content_hash for a in share], TermCounts.of(a.text for a in share)) for share in shares]
    left = [a for a in adrs[:half] if a not in adrs[:half:2]]
    fresh = TermCounts.of(a.text for a in adrs)
    seen = _counting(monkeypatch)
    counts = lexical_cache.term_counts(adrs, tmp_path / "lexical.arrays", counted)
    assert seen == [len({a.content_hash for a in left})]  # only what no share counted
    assert counts.vocab == fresh.vocab
    for name in ("offsets", "terms", "counts"):
        assert np.array_equal(getattr(counts, name), getattr(fresh, name))


def test_a_process_counts_only_the_adrs_the_cache_lacks(
    adrs: list[Adr], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    ChromaAdrIndex(store, "corpora").sync(adrs[:-3])
    counted = _counting(monkeypatch)
    index = ChromaAdrIndex(store, "corpora")
    index.sync(adrs)
    assert counted == [3]  # the three new ADRs, once
    index.search("consensus and the light client")
    assert lexical_cache.is_current(adrs, store / "lexical-corpora.arrays") and counted == [3]


def test_counts_from_other_code_are_not_used(
    adrs: list[Adr], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lexical.arrays"
    lexical_cache.term_counts(adrs, path)
    assert lexical_cache.is_current(adrs, path)
    monkeypatch.setattr(lexical_cache, "counts_key", lambda: "another tokeniser")
    assert not lexical_cache.is_current(adrs, path)
    (tmp_path / "broken.arrays").write_bytes(b"not an array file")
    assert not lexical_cache.is_current(adrs, tmp_path / "broken.arrays")
    assert lexical_cache.term_counts(adrs, tmp_path / "broken.arrays").n_docs == len(adrs)


def test_a_truncated_cache_file_is_counted_again(adrs: list[Adr], tmp_path: Path) -> None:
    """A file cut short (a partial cache restore): its last record ends past the end of the file."""
    path = tmp_path / "lexical.arrays"
    lexical_cache.term_counts(adrs, path)
    path.write_bytes(path.read_bytes()[:200])
    assert not lexical_cache.is_current(adrs, path)
    assert lexical_cache.term_counts(adrs, path).n_docs == len(adrs)
    assert lexical_cache.is_current(adrs, path)  # and written again whole


def test_a_cache_file_whose_arrays_disagree_is_counted_again(adrs: list[Adr], tmp_path: Path) -> None:
    """Records that read but do not fit together (no offsets at all, counts of another length)."""
    path = tmp_path / "lexical.arrays"
    lexical_cache.term_counts(adrs, path)
    got = read_arrays(path, lexical_cache.FORMAT, lexical_cache.counts_key())
    assert got is not None
    meta, arrays = got
    for damaged in (
        {**arrays, "offsets": arrays["offsets"][:0]},
        {**arrays, "counts": arrays["counts"][:-1]},
    ):
        write_arrays(path, {k: v for k, v in meta.items() if k != "arrays"}, "test", **damaged)
        assert not lexical_cache.is_current(adrs, path)
        assert lexical_cache.term_counts(adrs, path).n_docs == len(adrs)
        assert lexical_cache.is_current(adrs, path)
