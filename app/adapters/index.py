"""The ADR index: a Chroma collection of section chunks (dense) + an in-memory BM25 (lexical).

One `PersistentClient` collection per ADR folder, cosine space. Sync is incremental by content hash:
every chunk carries its document's path and sha256 in its metadata, so the collection itself is the
manifest (no second file to drift). Unchanged ADRs are not re-embedded, changed ones are replaced,
deleted ones removed; a different embedding function or chunking rebuilds the collection.

The lexical index is rebuilt in memory from the ADR texts after every sync (it takes well under a
second for hundreds of ADRs) and the Adr objects themselves are kept from the last sync: the index
answers only for the ADRs it was last synced with.

Dense search asks Chroma for every chunk in scope (the pool minus exclusions), so every document gets
its exact best-chunk cosine; ADR folders are hundreds of documents, not millions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.adapters.chroma_store import open_chroma_client
from app.adapters.embeddings import (
    EmbeddingError,
    embed_texts,
    fingerprint,
    label_of,
    make_embedding_function,
)
from app.core.adr import Adr
from app.core.chunking import ChunkParams, chunk_text
from app.core.fusion import DocScores, FusionParams, Ranking, empty_result, fuse, rank
from app.core.lexical import Bm25Params, LexicalIndex
from app.core.results import RetrievalResult
from app.core.text import tokenize
from app.pipeline.ports import SyncReport

log = logging.getLogger("adr_review.index")

SCHEMA = "adr-review-index/1"
Progress = Callable[[int, int], None]  # (chunks embedded so far, chunks to embed)
_BATCH = 512  # chunks per Chroma add: fewer, larger inserts are much cheaper
# Small HNSW graphs: construction effort matters more than graph quality, because a search asks for
# every chunk in scope (exhaustive) and any chunk the graph misses is scored exactly (_dense).
_HNSW = {"space": "cosine", "ef_construction": 50, "max_neighbors": 16}


@dataclass
class QueryScores:
    """Everything one query measured before fusion (the eval ranks these three ways)."""

    scores: list[DocScores]
    dense_failed: bool
    diagnostics: dict[str, Any] = field(default_factory=dict)


class ChromaAdrIndex:
    """AdrIndex over an embedded Chroma store. Call `sync` before `search`."""

    def __init__(
        self,
        store_dir: Path,
        collection: str,
        *,
        embedding: str | None = None,
        fusion: FusionParams | None = None,
        chunking: ChunkParams | None = None,
        bm25: Bm25Params | None = None,
        adr_dir: str = "",
    ) -> None:
        self.store_dir = Path(store_dir)
        self.collection_name = collection
        self.fusion = fusion or FusionParams()
        self.chunking = chunking or ChunkParams()
        self.bm25 = bm25 or Bm25Params()
        self.adr_dir = adr_dir
        self._ef = make_embedding_function(embedding)
        self.embedding = label_of(self._ef)
        self._client, self.store_note = open_chroma_client(self.store_dir)  # the note is logged
        self._collection: Any = None
        self._adrs: list[Adr] = []
        self._by_path: dict[str, int] = {}
        self._chunks: dict[str, list[str]] = {}  # path -> chunk ids stored in Chroma
        self._lexical: LexicalIndex | None = None
        self.embedding_error: str | None = None

    # --- sync -----------------------------------------------------------------------------------------

    def sync(self, adrs: Sequence[Adr], progress: Progress | None = None) -> SyncReport:
        start = time.perf_counter()
        rebuilt = self._open_collection()
        stored = self._stored_hashes()
        current = {a.path: a for a in adrs}
        removed = [p for p in stored if p not in current]
        updated = [p for p, a in current.items() if p in stored and stored[p] != a.content_hash]
        added = [p for p in current if p not in stored]
        unchanged = len(current) - len(updated) - len(added)
        stale_ids = [cid for p in removed + updated for cid in self._chunks.get(p, [])]
        for i in range(0, len(stale_ids), 1000):
            self._collection.delete(ids=stale_ids[i : i + 1000])
        for p in removed + updated:
            self._chunks.pop(p, None)
        errors: list[str] = []
        self.embedding_error = None
        todo = [current[p] for p in sorted(updated + added)]
        embedded: set[str] = set()
        try:
            self._embed_and_add(todo, progress, embedded)
        except EmbeddingError as exc:
            self.embedding_error = str(exc)
            missing = len(todo) - len(embedded)
            errors.append(
                f"embedding {self.embedding} failed: {exc} ({missing} ADR(s) not embedded; they are searched "
                "lexically until a sync can embed them)"
            )
            log.warning("embedding %s failed, retrieval will be lexical-only: %s", self.embedding, exc)
        self._adrs = list(adrs)
        self._by_path = {a.path: i for i, a in enumerate(self._adrs)}
        self._lexical = None
        return SyncReport(
            added=sum(1 for p in added if p in embedded),
            updated=sum(1 for p in updated if p in embedded),
            removed=len(removed),
            unchanged=unchanged,
            errors=tuple(errors),
            seconds=time.perf_counter() - start,
            embedding=self.embedding,
            rebuilt=rebuilt,
        )

    def _open_collection(self) -> bool:
        """Get or create the collection; drop it first when its embedding or chunking changed."""
        meta = {
            "schema": SCHEMA,
            "embedding": self.embedding,
            "embedding_fingerprint": fingerprint(self._ef),
            "chunking": self.chunking.key(),
            "adr_dir": self.adr_dir or "-",
        }
        rebuilt = False
        existing = {c.name for c in self._client.list_collections()}
        if self.collection_name in existing:
            # first without our embedding function: Chroma refuses to open a collection whose
            # persisted function has another name, which is exactly the case that needs a rebuild
            old = self._client.get_collection(self.collection_name, embedding_function=None).metadata or {}
            if any(old.get(k) != meta[k] for k in ("schema", "embedding_fingerprint", "chunking")):
                log.info(
                    "index %s: embedding or chunking changed (%s -> %s), rebuilding",
                    self.collection_name,
                    old.get("embedding"),
                    self.embedding,
                )
                self._client.delete_collection(self.collection_name)
                rebuilt = True
            else:
                self._collection = self._client.get_collection(
                    self.collection_name, embedding_function=self._ef
                )
                return False
        self._collection = self._client.create_collection(
            self.collection_name,
            configuration={"hnsw": dict(_HNSW)},
            metadata=meta,
            embedding_function=self._ef,
        )
        self._chunks = {}
        return rebuilt

    def _stored_hashes(self) -> dict[str, str]:
        got = self._collection.get(include=["metadatas"])
        hashes: dict[str, str] = {}
        chunks: dict[str, list[str]] = {}
        expected: dict[str, int] = {}
        for cid, meta in zip(got["ids"], got["metadatas"] or [], strict=False):
            path = str(meta["path"])
            chunks.setdefault(path, []).append(cid)
            expected[path] = int(meta.get("chunks", 0) or 0)
            prev = hashes.setdefault(path, str(meta["content_hash"]))
            if prev != meta["content_hash"]:
                hashes[path] = ""  # mixed versions: treat as changed
        for path, ids in chunks.items():
            if len(ids) != expected[path]:
                hashes[path] = ""  # half-written (an embedding failed mid-document): treat as changed
        self._chunks = chunks
        return hashes

    def _embed_and_add(self, adrs: Sequence[Adr], progress: Progress | None, stored: set[str]) -> None:
        """Embed and add in batches; `stored` collects the paths whose chunks are all in."""
        ids: list[str] = []
        docs: list[str] = []  # embedded, not stored: the ADR text lives in the folder
        metas: list[dict[str, Any]] = []
        for adr in adrs:
            pieces = chunk_text(adr.text, adr.title, self.chunking) or [adr.title or adr.path]
            for i, piece in enumerate(pieces):
                ids.append(f"{adr.path}::{i}")
                docs.append(piece)
                metas.append(
                    {"path": adr.path, "content_hash": adr.content_hash, "chunk": i, "chunks": len(pieces)}
                )
        total = len(ids)
        if progress:
            progress(0, total)
        for lo in range(0, total, _BATCH):
            hi = min(lo + _BATCH, total)
            vectors = embed_texts(self._ef, docs[lo:hi])
            self._collection.add(ids=ids[lo:hi], embeddings=vectors, metadatas=metas[lo:hi])
            for cid, meta in zip(ids[lo:hi], metas[lo:hi], strict=True):
                self._chunks.setdefault(str(meta["path"]), []).append(cid)
                if meta["chunk"] == meta["chunks"] - 1:
                    stored.add(str(meta["path"]))
            if progress:
                progress(hi, total)

    # --- search ---------------------------------------------------------------------------------------

    @property
    def adrs(self) -> list[Adr]:
        return list(self._adrs)

    def lexical(self) -> LexicalIndex:
        if self._lexical is None:
            self._lexical = LexicalIndex(
                [a.text for a in self._adrs], [a.title for a in self._adrs], self.bm25
            )
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
        if not tokenize(query):
            return empty_result("empty_input", base)
        if not self._adrs:
            return empty_result("empty_index", base)
        qs = self.score(query, exclude_paths=exclude_paths, pool=pool)
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
            "top_n": n,
        }
        return RetrievalResult(ranking.candidates, ranking.empty_reason, diagnostics)

    def score(
        self,
        query: str,
        *,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
    ) -> QueryScores:
        """Lexical and dense scores of every ADR in scope (pool minus exclusions), unfused."""
        scope = [
            i
            for i, a in enumerate(self._adrs)
            if a.path not in exclude_paths and (pool is None or a.path in pool)
        ]
        diagnostics: dict[str, Any] = {"scope_size": len(scope), "timings_ms": {}}
        if not scope:
            return QueryScores([], self.embedding_error is not None, diagnostics)
        t = time.perf_counter()
        lex = self.lexical().scores(query, scope)
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
        scores = [
            DocScores(
                adr=self._adrs[i],
                dense=dense.get(self._adrs[i].path),
                bm25=float(lex.bm25[i]),
                title=float(lex.title[i]),
            )
            for i in scope
        ]
        return QueryScores(scores, dense_failed, diagnostics)

    def _dense(self, query: str, paths: Sequence[str]) -> tuple[dict[str, float], str | None]:
        if self.embedding_error is not None:
            return {}, self.embedding_error
        n_chunks = sum(len(self._chunks.get(p, ())) for p in paths)
        if n_chunks == 0:
            return {}, None
        try:
            qvec = embed_texts(self._ef, [query])
        except EmbeddingError as exc:
            return {}, str(exc)
        where: dict[str, Any] | None = None
        if len(paths) < len(self._adrs):
            where = {"path": {"$in": list(paths)}}
        res = self._collection.query(
            query_embeddings=qvec,
            n_results=n_chunks,
            where=where,
            include=["metadatas", "distances"],
        )
        best: dict[str, float] = {}
        seen = set(res["ids"][0])
        for meta, dist in zip(res["metadatas"][0], res["distances"][0], strict=False):
            path = str(meta["path"])
            cos = 1.0 - float(dist)
            if cos > best.get(path, -2.0):
                best[path] = cos
        missed = [cid for p in paths for cid in self._chunks.get(p, ()) if cid not in seen]
        if missed:  # approximate search left some out: score them exactly
            got = self._collection.get(ids=missed, include=["embeddings", "metadatas"])
            q = qvec[0].astype(np.float64)
            for vec, meta in zip(got["embeddings"], got["metadatas"], strict=False):
                v = np.asarray(vec, dtype=np.float64)
                cos = float(v @ q / ((np.linalg.norm(v) * np.linalg.norm(q)) or 1.0))
                path = str(meta["path"])
                if cos > best.get(path, -2.0):
                    best[path] = cos
        return best, None

    def _similarity(self, paths: Sequence[str]) -> Callable[[Adr, Adr], float] | None:
        """Document-document cosine for MMR: each document is the mean of its chunk vectors."""
        ids = [cid for p in paths for cid in self._chunks.get(p, [])]
        if not ids or self.embedding_error is not None:
            return None
        got = self._collection.get(ids=ids, include=["embeddings", "metadatas"])
        sums: dict[str, np.ndarray] = {}
        for vec, meta in zip(got["embeddings"], got["metadatas"], strict=False):
            path = str(meta["path"])
            v = np.asarray(vec, dtype=np.float64)
            sums[path] = sums[path] + v if path in sums else v
        unit = {p: v / (np.linalg.norm(v) or 1.0) for p, v in sums.items()}

        def sim(a: Adr, b: Adr) -> float:
            va, vb = unit.get(a.path), unit.get(b.path)
            return float(va @ vb) if va is not None and vb is not None else 0.0

        return sim
