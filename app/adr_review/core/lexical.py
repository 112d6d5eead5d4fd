"""The lexical half of hybrid retrieval: BM25 over whole ADRs, plus title coverage.

BM25 is rank-bm25's Okapi BM25 (same formula, same IDF floor; tests/core/test_lexical.py compares the
scores with `rank_bm25.BM25Okapi`). It is computed from per-document term counts (`TermCounts`), not
from texts: the counts are all BM25 needs, and a store keeps them by content hash so a process loads
arrays instead of re-tokenising the folder (app/adr_review/adapters/lexical_cache.py). Document frequencies and
lengths are derived from the counts.

Scoring is vectorised over postings because proposals are long queries (thousands of tokens) and
because a search can be restricted to a *pool*: the statistics (document frequencies, average length)
are then those of the pool, exactly what BM25 over only those documents would give. The pool is the
collection being searched; in an evaluation it is "the ADRs that existed when the proposal was
written"; in a review it is every ADR but the proposal.

Title coverage is the IDF-weighted share of a candidate's title terms that occur in the query. BM25
asks "how much of the query is in this ADR"; coverage asks the reverse for the ADR's most condensed
statement of its subject: a proposal that builds on "Policy matching" tends to name it.

Terms come from adr_review.core.text.search_tokens: NFKC + case-folded words, CJK runs cut at their hiragana
and the kanji / katakana pieces as character bigrams.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from adr_review.core.text import FUNCTION_WORDS, search_tokens

RARE_DF = 2  # "rare" for the evidence: a term at most this many documents of the pool contain


@dataclass(frozen=True)
class Bm25Params:
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25  # rank-bm25's floor for negative IDF, as a share of the average IDF


@dataclass(frozen=True)
class LexicalScores:
    bm25: np.ndarray  # per document; 0 outside the pool
    title: np.ndarray  # per document, in [0, 1]; 0 outside the pool
    # The calibrated evidence's lexical half (app/adr_review/core/evidence.py), absolute rather than relative to
    # the best hit; 0 outside the pool. Function words carry no weight in any of them.
    coverage: np.ndarray | None = None  # IDF-weighted share of the query's terms the document has
    rare_idf: np.ndarray | None = None  # IDF mass of the terms it shares with the query that at most
    rare_count: np.ndarray | None = None  # RARE_DF documents of the pool have; those only it has


@dataclass(frozen=True, eq=False)
class TermCounts:
    """Every document's term counts as flat arrays, document after document: document d's terms are
    `terms[offsets[d]:offsets[d + 1]]` (ids into `vocab`) with their counts."""

    vocab: tuple[str, ...]
    offsets: np.ndarray  # int64, n_docs + 1
    terms: np.ndarray  # int32
    counts: np.ndarray  # int32

    @property
    def n_docs(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def of(cls, texts: Iterable[str]) -> TermCounts:
        """Tokenise and count (the only step that reads the texts)."""
        vocab: dict[str, int] = {}
        offsets = [0]
        terms: list[int] = []
        counts: list[int] = []
        for text in texts:
            for term, tf in Counter(search_tokens(text)).items():
                terms.append(vocab.setdefault(term, len(vocab)))
                counts.append(tf)
            offsets.append(len(terms))
        return cls(
            tuple(vocab),
            np.asarray(offsets, dtype=np.int64),
            np.asarray(terms, dtype=np.int32),
            np.asarray(counts, dtype=np.int32),
        )

    @classmethod
    def gather(cls, picks: Sequence[tuple[TermCounts, int]]) -> TermCounts:
        """The documents (source, row) in this order, over one vocabulary of only the terms they use."""
        vocab: dict[str, int] = {}
        remap: dict[int, np.ndarray] = {}
        parts_t: list[np.ndarray] = []
        parts_c: list[np.ndarray] = []
        lengths = np.zeros(len(picks), dtype=np.int64)
        for i, (source, row) in enumerate(picks):
            ids = remap.get(id(source))
            if ids is None:
                ids = np.asarray([vocab.setdefault(t, len(vocab)) for t in source.vocab], dtype=np.int32)
                remap[id(source)] = ids
            lo, hi = int(source.offsets[row]), int(source.offsets[row + 1])
            parts_t.append(ids[source.terms[lo:hi]])
            parts_c.append(source.counts[lo:hi])
            lengths[i] = hi - lo
        joined = np.concatenate(parts_t) if parts_t else np.zeros(0, dtype=np.int32)
        counts = np.concatenate(parts_c) if parts_c else np.zeros(0, dtype=np.int32)
        # The vocabulary in order of first use, as `of` numbers it: gathered counts of a folder are
        # then the very arrays a fresh count gives (same postings order, same sums). Terms no picked
        # document uses are dropped (a source may hold documents that were not picked).
        used, first = np.unique(joined, return_index=True)
        canonical = used[np.argsort(first, kind="stable")]
        renumber = np.zeros(len(vocab), dtype=np.int32)
        renumber[canonical] = np.arange(len(canonical), dtype=np.int32)
        words = list(vocab)
        return cls(
            tuple(words[i] for i in canonical),
            np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            renumber[joined],
            counts,
        )


class LexicalIndex:
    """Immutable once built; rebuild it when the documents change (from cached counts: arrays only)."""

    def __init__(
        self,
        texts: Sequence[str],
        titles: Sequence[str] | None = None,
        params: Bm25Params | None = None,
    ) -> None:
        self._build(TermCounts.of(texts), titles, params)

    @classmethod
    def from_counts(
        cls, counts: TermCounts, titles: Sequence[str] | None = None, params: Bm25Params | None = None
    ) -> LexicalIndex:
        index = cls.__new__(cls)
        index._build(counts, titles, params)
        return index

    def _build(self, tc: TermCounts, titles: Sequence[str] | None, params: Bm25Params | None) -> None:
        self.params = params or Bm25Params()
        self.n_docs = tc.n_docs
        self.vocab = {term: i for i, term in enumerate(tc.vocab)}
        self._counts = tc
        per_doc = np.diff(tc.offsets)
        docs = np.repeat(np.arange(self.n_docs, dtype=np.int64), per_doc)
        # postings by term, documents in order within a term; numpy sorts 16-bit keys stably by radix
        # (a few times faster than the merge sort of 32-bit ones: most of a recall's BM25 build)
        keys = tc.terms.astype(np.uint16) if len(tc.vocab) <= 1 << 16 else tc.terms
        order = np.argsort(keys, kind="stable")
        self._t = tc.terms[order].astype(np.int64)
        self._d = docs[order]
        self._tf = tc.counts[order].astype(np.float64)
        self._starts = np.searchsorted(self._t, np.arange(len(self.vocab) + 1))
        self._dl = np.bincount(docs, weights=tc.counts, minlength=self.n_docs).astype(np.float64)
        self._df_all = np.bincount(self._t, minlength=len(self.vocab))
        title_docs: list[int] = []
        title_terms: list[str] = []
        for d, title in enumerate(titles or ()):
            for term in sorted(set(search_tokens(title))):
                title_docs.append(d)
                title_terms.append(term)
        self._title_d = np.asarray(title_docs, dtype=np.int64)
        self._title_terms = title_terms
        self._title_t = np.asarray(
            [self.vocab.get(t, -1) for t in title_terms], dtype=np.int64
        )  # -1: not in any text

    def scores(
        self,
        query: str | Sequence[str],
        pool: Sequence[int] | None = None,
        *,
        foreign_pool: bool = False,
    ) -> LexicalScores:
        """BM25 and title coverage of every document for `query` (text or tokens), within `pool`.

        `foreign_pool`: most of the pool is in another language than the query. Its function words
        are then rare there ("the" in a Japanese pool), and a query repeating them would make the few
        ADRs that quote some English the top hits (even at the IDF floor, times a long query's count):
        they carry no weight. In a pool of their own language nothing changes."""
        tokens = search_tokens(query) if isinstance(query, str) else list(query)
        n_all = self.n_docs
        zeros = LexicalScores(np.zeros(n_all), np.zeros(n_all))
        if n_all == 0:
            return zeros
        mask = np.ones(n_all, dtype=bool)
        if pool is not None:
            mask[:] = False
            mask[np.asarray(list(pool), dtype=np.int64)] = True
        n = int(mask.sum())
        if n == 0 or not tokens:
            return zeros
        df = self._pool_df(mask, n).astype(np.float64)
        coverage, rare_idf, rare_count = self._shared(tokens, mask, n, df)
        bm25 = self._bm25(tokens, mask, n, df, FUNCTION_WORDS if foreign_pool else frozenset())
        return LexicalScores(bm25, self._title(tokens, mask, n, df), coverage, rare_idf, rare_count)

    def _shared(
        self, tokens: Sequence[str], mask: np.ndarray, n: int, df: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What each document shares with the query's distinct content terms, weighted by IDF
        log((n + 1) / (df + 0.5)) in the pool: the share of the query's IDF mass (terms no document of
        the pool has count for nothing), the IDF mass of the rare shared terms, and the number of
        shared terms no other document of the pool has. Function words (of either language) are left
        out: in a pool of the other language "the" is rare, and one repeated article must not make
        an ADR look related."""
        coverage, rare_idf, rare_count = np.zeros(self.n_docs), np.zeros(self.n_docs), np.zeros(self.n_docs)
        ids = sorted(
            {tid for t in set(tokens) if t not in FUNCTION_WORDS and (tid := self.vocab.get(t)) is not None}
        )
        ids = [tid for tid in ids if df[tid] > 0]
        if not ids:
            return coverage, rare_idf, rare_count
        tids = np.asarray(ids, dtype=np.int64)
        idf = np.log((n + 1) / (df[tids] + 0.5))
        for tid, weight in zip(ids, idf.tolist(), strict=True):
            lo, hi = self._starts[tid], self._starts[tid + 1]
            docs = self._d[lo:hi]
            docs = docs[mask[docs]]
            coverage[docs] += weight
            if df[tid] <= RARE_DF:
                rare_idf[docs] += weight
                if df[tid] == 1:
                    rare_count[docs] += 1
        coverage /= float(idf.sum())
        return coverage, rare_idf, rare_count

    def _pool_df(self, mask: np.ndarray, n: int) -> np.ndarray:
        """Document frequencies within the pool; a pool of most documents (a review: all but the
        proposal) subtracts the few others from the folder's counts instead of recounting."""
        if n * 2 < self.n_docs:
            return np.bincount(self._t[mask[self._d]], minlength=len(self.vocab))
        others = np.flatnonzero(~mask)
        if len(others) == 0:
            return self._df_all
        tc = self._counts
        starts, ends = tc.offsets[others], tc.offsets[others + 1]
        lengths = ends - starts
        # every posting of the other documents: the ranges [start, end) concatenated
        rel = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        rows = np.repeat(starts, lengths) + rel
        return self._df_all - np.bincount(tc.terms[rows], minlength=len(self.vocab))

    def _bm25(
        self, tokens: Sequence[str], mask: np.ndarray, n: int, df: np.ndarray, capped: frozenset[str]
    ) -> np.ndarray:
        k1, b, eps = self.params.k1, self.params.b, self.params.epsilon
        avgdl = float(self._dl[mask].sum()) / n
        scores = np.zeros(self.n_docs)
        if avgdl == 0:
            return scores
        present = df > 0
        idf_all = np.log(n - df[present] + 0.5) - np.log(df[present] + 0.5)
        floor = eps * float(idf_all.mean()) if len(idf_all) else 0.0
        norm = k1 * (1 - b + b * self._dl / avgdl)
        for term, qtf in Counter(tokens).items():
            tid = self.vocab.get(term)
            if tid is None or df[tid] == 0:
                continue
            idf = float(np.log(n - df[tid] + 0.5) - np.log(df[tid] + 0.5))
            if term in capped:
                continue
            if idf < 0:
                idf = floor
            lo, hi = self._starts[tid], self._starts[tid + 1]
            docs, tf = self._d[lo:hi], self._tf[lo:hi]
            scores[docs] += qtf * idf * tf * (k1 + 1) / (tf + norm[docs])
        scores[~mask] = 0.0
        return scores

    def _title(self, tokens: Sequence[str], mask: np.ndarray, n: int, df: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n_docs)
        if len(self._title_d) == 0:
            return out
        query_terms = set(tokens)
        hit = np.fromiter(
            (t in query_terms for t in self._title_terms), dtype=bool, count=len(self._title_terms)
        )
        term_df = np.where(self._title_t >= 0, df[np.maximum(self._title_t, 0)], 0.0)
        idf = np.log((n + 1) / (term_df + 0.5))
        num = np.bincount(self._title_d, weights=idf * hit, minlength=self.n_docs)
        den = np.bincount(self._title_d, weights=idf, minlength=self.n_docs)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
        out[~mask] = 0.0
        return out
