"""The lexical half of hybrid retrieval: BM25 over whole ADRs, plus title coverage.

BM25 is rank-bm25's Okapi BM25 (same formula, same IDF floor), built from `rank_bm25.BM25Okapi`'s
tokenised corpus. Scoring is vectorised over postings because proposals are long queries (thousands of
tokens; rank-bm25's `get_scores` loops over every query token and every document) and because a
search can be restricted to a *pool*: the statistics (document frequencies, average length) are then
those of the pool, exactly what BM25 over only those documents would give. The pool is the collection
being searched; in an evaluation it is "the ADRs that existed when the proposal was written".

Title coverage is the IDF-weighted share of a candidate's title terms that occur in the query. BM25
asks "how much of the query is in this ADR"; coverage asks the reverse for the ADR's most condensed
statement of its subject: a proposal that builds on "Policy matching" tends to name it.

Tokens come from app.core.text.tokenize: NFKC + case-folded words, CJK runs as character bigrams.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from rank_bm25 import BM25Okapi

from app.core.text import tokenize


@dataclass(frozen=True)
class Bm25Params:
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25  # rank-bm25's floor for negative IDF, as a share of the average IDF


@dataclass(frozen=True)
class LexicalScores:
    bm25: np.ndarray  # per document; 0 outside the pool
    title: np.ndarray  # per document, in [0, 1]; 0 outside the pool


class LexicalIndex:
    """Immutable once built; rebuild it when the documents change (cheap: ~0.3 s per 1 MB of text)."""

    def __init__(
        self,
        texts: Sequence[str],
        titles: Sequence[str] | None = None,
        params: Bm25Params | None = None,
    ) -> None:
        self.params = params or Bm25Params()
        self.n_docs = len(texts)
        docs_tokens = [tokenize(t) for t in texts]
        vocab: dict[str, int] = {}
        t_ids: list[int] = []
        d_ids: list[int] = []
        tfs: list[int] = []
        if self.n_docs and any(docs_tokens):
            model = BM25Okapi(docs_tokens, k1=self.params.k1, b=self.params.b, epsilon=self.params.epsilon)
            freqs: Iterable[dict[str, int]] = model.doc_freqs
        else:  # rank-bm25 divides by zero on an empty corpus
            freqs = [dict(Counter(toks)) for toks in docs_tokens]
        for d, doc in enumerate(freqs):
            for term, tf in doc.items():
                t_ids.append(vocab.setdefault(term, len(vocab)))
                d_ids.append(d)
                tfs.append(tf)
        self.vocab = vocab
        t_arr = np.asarray(t_ids, dtype=np.int64)
        order = np.argsort(t_arr, kind="stable")
        self._t = t_arr[order]
        self._d = np.asarray(d_ids, dtype=np.int64)[order]
        self._tf = np.asarray(tfs, dtype=np.float64)[order]
        self._starts = np.searchsorted(self._t, np.arange(len(vocab) + 1))
        self._dl = np.asarray([len(t) for t in docs_tokens], dtype=np.float64)
        title_docs: list[int] = []
        title_terms: list[str] = []
        for d, title in enumerate(titles or ()):
            for term in sorted(set(tokenize(title))):
                title_docs.append(d)
                title_terms.append(term)
        self._title_d = np.asarray(title_docs, dtype=np.int64)
        self._title_terms = title_terms
        self._title_t = np.asarray(
            [vocab.get(t, -1) for t in title_terms], dtype=np.int64
        )  # -1: not in any text

    def scores(self, query: str | Sequence[str], pool: Sequence[int] | None = None) -> LexicalScores:
        """BM25 and title coverage of every document for `query` (text or tokens), within `pool`."""
        tokens = tokenize(query) if isinstance(query, str) else list(query)
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
        df = np.bincount(self._t[mask[self._d]], minlength=len(self.vocab)).astype(np.float64)
        return LexicalScores(self._bm25(tokens, mask, n, df), self._title(tokens, mask, n, df))

    def _bm25(self, tokens: Sequence[str], mask: np.ndarray, n: int, df: np.ndarray) -> np.ndarray:
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
