"""Search over the ADR index: score every ADR in scope, then fuse, qualify and diversify.

The half of ChromaAdrIndex (index.py) that answers queries. Three channels are measured per query:
BM25 and title coverage (lexical_cache.py's term counts), the dense channel (each ADR's best-chunk
cosine, one matrix product over the index mirror), and, when the folder's multilingual channel is
on (xl_vectors.py), a cross-language score for the ADRs in another language than the query, which
only the fusion's cross-language slots read (app/adr_review/core/fusion.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adr_review.adapters import lexical_cache
from adr_review.adapters.array_file import SUFFIX
from adr_review.adapters.embeddings import Embedder, EmbeddingError, embed_texts
from adr_review.adapters.index_mirror import IndexMirror
from adr_review.adapters.xl_channel import CrossLanguageScorer, Multilingual, multilingual_available
from adr_review.core.adr import Adr
from adr_review.core.fusion import (
    CrossLanguageMatch,
    DocScores,
    FusionParams,
    Ranking,
    empty_result,
    fuse,
    rank,
)
from adr_review.core.lexical import Bm25Params, LexicalIndex, TermCounts
from adr_review.core.results import RetrievalResult
from adr_review.core.text import is_japanese, search_tokens

log = logging.getLogger("adr_review.index")


@dataclass
class QueryScores:
    """Everything one query measured before fusion (the eval ranks these three ways)."""

    scores: list[DocScores]
    dense_failed: bool
    diagnostics: dict[str, Any] = field(default_factory=dict)


class IndexSearch:
    """The search methods of ChromaAdrIndex, over the state its sync leaves (declared here)."""

    store_dir: Path
    collection_name: str
    embedding: str
    embedding_error: str | None
    fusion: FusionParams
    bm25: Bm25Params
    dense_temperature: float
    xl_active: bool
    multilingual: Multilingual
    _ef: Embedder
    _mirror: IndexMirror | None
    _xl: CrossLanguageScorer
    _adr_list: list[Adr]
    _adr_loader: Callable[[], Sequence[Adr]] | None
    _counts: TermCounts | None
    _lexical: LexicalIndex | None

    @property
    def _adrs(self) -> list[Adr]:
        if self._adr_loader is not None:
            self._adr_list, self._adr_loader = list(self._adr_loader()), None
        return self._adr_list

    @property
    def _lexical_path(self) -> Path:
        return self.store_dir / f"lexical-{self.collection_name}{SUFFIX}"

    @property
    def adrs(self) -> list[Adr]:
        return list(self._adrs)

    def lexical(self) -> LexicalIndex:
        if self._lexical is None:
            counts = self._counts or lexical_cache.term_counts(self._adrs, self._lexical_path)
            self._lexical = LexicalIndex.from_counts(counts, [a.title for a in self._adrs], self.bm25)
            self._counts = None
        return self._lexical

    def search(
        self,
        query: str,
        *,
        top_n: int = 20,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
    ) -> RetrievalResult:
        base = {"embedding": self.embedding, "embedding_failed": False, "index_size": len(self._adrs)}
        tokens = search_tokens(query)
        if not tokens:
            return empty_result("empty_input", base)
        if not self._adrs:
            return empty_result("empty_index", base)
        qs = self.score(query, exclude_paths=exclude_paths, pool=pool, tokens=tokens)
        return self.rank_scores(qs, top_n=top_n, base=base)

    def rank_scores(
        self, qs: QueryScores, *, top_n: int | None = None, base: dict[str, Any] | None = None
    ) -> RetrievalResult:
        """Fuse, qualify and diversify measured scores (search = score + rank_scores)."""
        n = top_n or self.fusion.top_n
        diagnostics: dict[str, Any] = {
            **(base or {"embedding": self.embedding, "index_size": len(self._adrs)}),
            **qs.diagnostics,
        }
        diagnostics["timings_ms"] = dict(qs.diagnostics.get("timings_ms", {}))
        if not qs.scores:
            return empty_result("no_candidates", diagnostics)
        t = time.perf_counter()
        similarity = None
        if self.fusion.mmr_lambda < 1.0:
            head = fuse(qs.scores, self.fusion, dense_failed=qs.dense_failed)[: 2 * n]
            similarity = self._similarity([c.adr.path for c in head])
        ranking: Ranking = rank(
            qs.scores, self.fusion, dense_failed=qs.dense_failed, similarity=similarity, top_n=n
        )
        diagnostics["timings_ms"]["fusion"] = round((time.perf_counter() - t) * 1000, 1)
        diagnostics.update(ranking.stats)
        diagnostics["params"] = {
            "dense_weight": self.fusion.dense_weight,
            "title_weight": self.fusion.title_weight,
            "bm25_weight": round(self.fusion.bm25_weight, 6),
            "qualify_cosine": self.fusion.qualify_cosine,
            "qualify_bm25_rel": self.fusion.qualify_bm25_rel,
            "mmr_lambda": self.fusion.mmr_lambda,
            "dense_temperature": self.dense_temperature,
            "top_n": n,
            "cross_language_slots": self.fusion.cross_language_slots if self.xl_active else 0,
            "cross_language_gate": self.fusion.cross_language_gate,
            "cross_language_fill_gate": self.fusion.cross_language_fill_gate,
        }
        return RetrievalResult(ranking.candidates, ranking.empty_reason, diagnostics)

    def score(
        self,
        query: str,
        *,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
        tokens: Sequence[str] | None = None,
    ) -> QueryScores:
        """Lexical and dense scores of every ADR in scope (pool minus exclusions), unfused; `tokens`:
        the query's, when the caller has them already."""
        scope = [
            i
            for i, a in enumerate(self._adrs)
            if a.path not in exclude_paths and (pool is None or a.path in pool)
        ]
        diagnostics: dict[str, Any] = {"scope_size": len(scope), "timings_ms": {}}
        if not scope:
            return QueryScores([], self.embedding_error is not None, diagnostics)
        t = time.perf_counter()
        language = "ja" if is_japanese(query) else "en"
        foreign = sum(1 for i in scope if self._adrs[i].language != language) * 2 > len(scope)
        lex = self.lexical().scores(
            search_tokens(query) if tokens is None else tokens, scope, foreign_pool=foreign
        )
        diagnostics["timings_ms"]["lexical"] = round((time.perf_counter() - t) * 1000, 1)
        t = time.perf_counter()
        dense, error = self._dense(query, [self._adrs[i].path for i in scope])
        diagnostics["timings_ms"]["dense"] = round((time.perf_counter() - t) * 1000, 1)
        dense_failed = error is not None
        diagnostics["embedding_failed"] = dense_failed
        if dense_failed:
            diagnostics["embedding_error"] = error
            diagnostics["warnings"] = [f"embedding {self.embedding} failed; lexical-only retrieval: {error}"]
            log.warning("embedding %s failed; lexical-only retrieval: %s", self.embedding, error)
        adrs, bm25, title = self._adrs, lex.bm25.tolist(), lex.title.tolist()
        zeros = [0.0] * len(adrs)
        coverage = lex.coverage.tolist() if lex.coverage is not None else zeros
        rare_idf = lex.rare_idf.tolist() if lex.rare_idf is not None else zeros
        rare_count = lex.rare_count.tolist() if lex.rare_count is not None else zeros
        xl = self._cross_language(
            query,
            language,
            [adrs[i].path for i in scope if adrs[i].language != language],
            [adrs[i].path for i in scope if adrs[i].language == language],
            diagnostics,
        )
        scores = [
            DocScores(
                adr=adrs[i],
                dense=dense.get(adrs[i].path),
                bm25=bm25[i],
                title=title[i],
                cross_language=adrs[i].language != language,
                cross_language_score=xl.scores.get(adrs[i].path),
                cross_language_evidence=xl.evidence.get(adrs[i].path),
                coverage=coverage[i],
                rare_idf=rare_idf[i],
                rare_count=int(rare_count[i]),
            )
            for i in scope
        ]
        return QueryScores(scores, dense_failed, diagnostics)

    def _cross_language(
        self,
        query: str,
        language: str,
        paths: Sequence[str],
        same_paths: Sequence[str],
        diagnostics: dict[str, Any],
    ) -> CrossLanguageMatch:
        """The cross-language scorer's scores of the other-language ADRs in scope (none: nothing to do)."""
        if not paths or not (self.xl_active or self._xl_for_a_foreign_query(language, diagnostics)):
            return CrossLanguageMatch()
        t = time.perf_counter()
        try:
            match = self._xl.score(query, language, paths, same_paths)
        except EmbeddingError as exc:
            warning = f"cross-language channel ({self._xl.model}) failed; no cross-language slots: {exc}"
            diagnostics.setdefault("warnings", []).append(warning)
            log.warning("%s", warning)
            return CrossLanguageMatch()
        diagnostics["timings_ms"]["cross_language"] = round((time.perf_counter() - t) * 1000, 1)
        diagnostics["cross_language_scored"] = len(match.scores)
        return match

    def _xl_for_a_foreign_query(self, language: str, diagnostics: dict[str, Any]) -> bool:
        """`auto` on a folder in one language turns the channel on for a query in the other one (a
        Japanese proposal over English ADRs, or the reverse): the sync skipped it, so the scorer's
        views are built now, once (they are kept beside the index; a Japanese folder's cost about
        11 ms an ADR); without the extra, the user is told so."""
        languages = {a.language for a in self._adrs}
        if self.multilingual != "auto" or language in languages or len(languages) != 1:
            return False
        if not multilingual_available(self._xl.model):
            note = (
                f"the proposal is in {language} and every ADR in {next(iter(languages))}: cross-language "
                f"recall ({self._xl.model}) needs the multilingual extra; continuing without it"
            )
            diagnostics.setdefault("warnings", []).append(note)
            return False
        try:
            self._xl.sync(self._adrs)
        except EmbeddingError as exc:
            warning = f"cross-language channel ({self._xl.model}) failed; no cross-language slots: {exc}"
            diagnostics.setdefault("warnings", []).append(warning)
            log.warning("%s", warning)
            return False
        self.xl_active = True
        return True

    def _dense(self, query: str, paths: Sequence[str]) -> tuple[dict[str, float], str | None]:
        """The dense channel: each ADR's chunk cosines with the query pooled (best chunk, or the soft
        maximum at `dense_temperature`), for the ADRs in scope."""
        if self.embedding_error is not None:
            return {}, self.embedding_error
        if self._mirror is None or not self._mirror.has_vectors(paths):
            return {}, None
        try:
            qvec = embed_texts(self._ef, [query])
        except EmbeddingError as exc:
            return {}, str(exc)
        return self._mirror.best_cosines(qvec[0], paths, self.dense_temperature), None

    def _similarity(self, paths: Sequence[str]) -> Callable[[Adr, Adr], float] | None:
        """Document-document cosine for MMR: each document is the mean of its chunk vectors."""
        if not paths or self.embedding_error is not None or self._mirror is None:
            return None
        unit = self._mirror.mean_vectors(paths)
        if not unit:
            return None

        def sim(a: Adr, b: Adr) -> float:
            va, vb = unit.get(a.path), unit.get(b.path)
            return float(va @ vb) if va is not None and vb is not None else 0.0

        return sim
