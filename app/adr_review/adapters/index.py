"""The ADR index: a Chroma collection of section chunks (dense) + BM25 over whole ADRs (lexical).

One `PersistentClient` collection per ADR folder, cosine space. Sync is incremental by content hash:
every chunk carries its document's path and sha256 in its metadata, so the collection itself is the
source of truth. Beside it, the index mirror (app/adr_review/adapters/index_mirror.py) records what the
collection holds (path, hash, chunk vectors): a sync compares the folder with the mirror and touches
the collection only for what changed; a lost or stale mirror is rebuilt from the collection by paged
reads. Unchanged ADRs are not re-embedded, changed ones are replaced, deleted ones removed; a
different embedding function or chunking rebuilds the collection.

Dense search scores every chunk in scope exactly, as one matrix product over the mirror's vectors
(`_dense`): each ADR gets its best-chunk cosine. The lexical index is built from term counts cached by
content hash (app/adr_review/adapters/lexical_cache.py), so a process loads arrays instead of tokenising the
folder. The Adr objects are kept from the last sync: the index answers only for the ADRs it was last
synced with. With `multilingual` on (or `auto` and a folder in more than one language), the sync also
brings the cross-language vector set up to date (app/adr_review/adapters/xl_vectors.py). Searching is
index_search.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from adr_review.adapters import chroma_store, lexical_cache
from adr_review.adapters.embeddings import EmbeddingError, embedding_for, fingerprint, label_of
from adr_review.adapters.index_mirror import IndexMirror, mirror_of, save_mirror
from adr_review.adapters.index_prep import IndexPrep
from adr_review.adapters.index_search import IndexSearch, QueryScores
from adr_review.adapters.index_write import Progress, add_chunks, write_rows
from adr_review.adapters.xl_channel import (
    DICTIONARY,
    Multilingual,
    cross_language_scorer_for,
    load_languages,
    save_languages,
    xl_wanted,
)
from adr_review.adapters.xl_vectors import XlScoring
from adr_review.core.adr import Adr
from adr_review.core.chunking import ChunkParams
from adr_review.core.fusion import FusionParams
from adr_review.core.lexical import Bm25Params, LexicalIndex, TermCounts
from adr_review.pipeline.ports import SyncReport

__all__ = ["ChromaAdrIndex", "QueryScores"]

log = logging.getLogger("adr_review.index")

SCHEMA = "adr-review-index/1"
_DELETE_BATCH = 1000  # ids per Chroma delete (SQLite caps the variables of one statement)
# Small HNSW graphs: construction effort matters more than graph quality, because our searches do not
# use the graph (dense scoring is exact, over the mirror); it serves other clients of the collection.
# 32 / 8 (from 50 / 16) saves about a third of the insert's CPU; the graph's recall@10 of 200 stored
# chunk vectors of the 644-ADR folder is 0.981 (0.989 before). Only new collections get it.
_HNSW = {"space": "cosine", "ef_construction": 32, "max_neighbors": 8}


class ChromaAdrIndex(IndexSearch):
    """AdrIndex over an embedded Chroma store. Call `sync` before `search` (index_search.py)."""

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
        multilingual: Multilingual = "off",
        xl_scoring: XlScoring | None = None,
        cross_language_scorer: str = DICTIONARY,
        dense_temperature: float = 0.0,  # RetrievalConfig's default: the best chunk
    ) -> None:
        self.store_dir = Path(store_dir)
        self.collection_name = collection
        self.fusion = fusion or FusionParams()
        self.chunking = chunking or ChunkParams()
        self.bm25 = bm25 or Bm25Params()
        self.dense_temperature = dense_temperature  # 0: best chunk; see app/adr_review/core/chunk_scores.py
        self.adr_dir = adr_dir
        self._ef = embedding_for(embedding)  # vectors, name and config; Chroma's wrapper: _chroma_ef
        self.embedding = label_of(self._ef)
        self._chroma: Any = None  # the client, opened when a collection is (see _client)
        self.store_note: str | None = None  # what opening the store recovered, if anything (logged)
        # A store that cannot be used is an IndexStoreError when the index opens (the commands say so
        # in one line), although Chroma itself is opened only when a sync needs it.
        if chroma_store.uses_server():
            self._client  # noqa: B018
        else:
            chroma_store.check_store_dir(self.store_dir)
        self._collection: Any = None
        self._fresh_collection = False  # created by this process: nothing stored yet
        self._adr_list: list[Adr] = []
        self._adr_loader: Callable[[], Sequence[Adr]] | None = None  # see sync_if_unchanged
        self._mirror: IndexMirror | None = None
        self._counts: TermCounts | None = None  # term counts computed by the last sync, if it had to
        self._lexical: LexicalIndex | None = None
        self.embedding_error: str | None = None
        # The cross-language channel (xl_vectors.py): on, off, or on for folders in several languages.
        self.multilingual = multilingual
        self._xl = cross_language_scorer_for(self.store_dir, collection, cross_language_scorer, xl_scoring)
        self._opened_early: bool | None = None  # the collection opened for _store_early: rebuilt?
        self.xl_active = False  # whether the last sync made the second vector set current

    # --- sync -----------------------------------------------------------------------------------------

    def preparation(self) -> IndexPrep:
        """What a sync of this index can take from the parse workers (index_prep.py)."""
        return IndexPrep(self._ef, self.chunking, store=self._store_early)

    def _store_early(self, rows: Sequence[tuple[str, str, np.ndarray]]) -> bool:
        """Write chunk vectors ahead of the sync, while the folder is still being parsed: only into a
        collection this sync creates in an embedded store (a cold index: nothing in it to compare
        or delete, and no other host writing it). False: not this time, the sync writes them."""
        if self._opened_early is None:
            if chroma_store.uses_server():
                return False
            self._opened_early = self._open_collection()
            if self._fresh_collection:
                IndexMirror.drop(self.store_dir, self.collection_name)  # as _apply does before a change
        if not self._fresh_collection:
            return False
        write_rows(self._collection, rows)
        return True

    def sync(
        self, adrs: Sequence[Adr], progress: Progress | None = None, prepared: IndexPrep | None = None
    ) -> SyncReport:
        """Bring the store to exactly `adrs`; `prepared` holds chunk vectors and term counts that were
        computed already (a cold index's parse workers), used where they fit, the rest is computed."""
        start = time.perf_counter()
        if self._opened_early is not None:  # by this sync's preparation, maybe with chunks in it
            rebuilt, self._opened_early = self._opened_early, None
        else:
            rebuilt = self._open_collection()
        mirror, checked = self._load_mirror()
        current = {a.path: a for a in adrs}
        removed, updated, added = mirror.diff(current)
        changed = removed or updated or added
        if changed and not checked and self._collection.count() != mirror.collection_count:
            # written to by something that did not keep the mirror: the collection says what is there
            log.info("index %s: the mirror is behind the collection, re-reading it", self.collection_name)
            mirror = self._mirror_from_collection()
            removed, updated, added = mirror.diff(current)
        errors: list[str] = []
        self.embedding_error = None
        embedded: set[str] = set()
        if removed or updated or added:
            todo = [current[p] for p in sorted(updated + added)]
            try:
                mirror = self._apply(mirror, current, removed + updated, todo, progress, embedded, prepared)
            except EmbeddingError as exc:
                self.embedding_error = str(exc)
                missing = len(todo) - len(embedded)
                errors.append(
                    f"embedding {self.embedding} failed: {exc} ({missing} ADR(s) not embedded; they are "
                    "searched lexically until a sync can embed them)"
                )
                log.warning("embedding %s failed, retrieval will be lexical-only: %s", self.embedding, exc)
                mirror = self._mirror or mirror
        self._mirror = mirror
        self._adr_list, self._adr_loader = list(adrs), None
        self._lexical, self._counts = None, None
        if not lexical_cache.is_current(self._adrs, self._lexical_path):
            counted = prepared.counts() if prepared is not None else ()
            self._counts = lexical_cache.term_counts(self._adrs, self._lexical_path, counted)
        errors.extend(self._sync_cross_language(adrs))
        return SyncReport(
            added=sum(1 for p in added if p in embedded),
            updated=sum(1 for p in updated if p in embedded),
            removed=len(removed),
            unchanged=len(current) - len(updated) - len(added),
            errors=tuple(errors),
            seconds=time.perf_counter() - start,
            embedding=self.embedding,
            rebuilt=rebuilt,
        )

    def sync_if_unchanged(
        self, hashes: Mapping[str, str], load: Callable[[], Sequence[Adr]]
    ) -> SyncReport | None:
        """A no-op sync that needs only each ADR's path and content hash: when the collection, its
        mirror and the lexical cache hold exactly these, the ADRs themselves are loaded (`load`) when
        a search first needs them. None when anything differs: then `sync` the ADRs."""
        start = time.perf_counter()
        mirror = self._fresh_mirror()
        if mirror is None:
            collection = chroma_store.existing_collection(
                self._client, self.collection_name, self._chroma_ef, self._meta()
            )
            if collection is None:
                return None
            self._collection, self._fresh_collection = collection, False
            mirror, _ = self._load_mirror()
        if mirror.partial or mirror.stored_hashes() != dict(hashes):
            return None
        if not lexical_cache.holds(self._lexical_path, list(hashes.values())):
            return None
        xl = self._xl_unchanged(hashes)
        if xl is None:
            return None
        self.xl_active = xl
        self._mirror, self.embedding_error = mirror, None
        self._adr_list, self._adr_loader = [], load
        self._lexical, self._counts = None, None
        return SyncReport(0, 0, 0, len(hashes), (), time.perf_counter() - start, self.embedding)

    def _fresh_mirror(self) -> IndexMirror | None:
        """The mirror on disk when it alone can answer (no Chroma opened): an embedded store (the
        mirror is dropped before its collection changes and written after), made with this embedding
        and chunking. On a Chroma server other hosts write the collection: it is asked."""
        if chroma_store.uses_server():
            return None
        mirror = IndexMirror.load(self.store_dir, self.collection_name)
        return mirror if mirror is not None and mirror.config == self._config_key() else None

    def open_store(self) -> None:
        """Open the Chroma client now, ahead of a sync that will (import chromadb, start the store)."""
        self._client  # noqa: B018

    @property
    def _client(self) -> Any:
        """The Chroma client, opened on first use: a recall on a fresh index never needs it."""
        if self._chroma is None:
            self._chroma, self.store_note = chroma_store.open_chroma_client(self.store_dir)
        return self._chroma

    @property
    def _chroma_ef(self) -> Any:
        """The collection's embedding function (chromadb's type, registered by name)."""
        from adr_review.adapters.embeddings_chroma import chroma_function

        return chroma_function(self._ef)

    def _config_key(self) -> str:
        return f"{fingerprint(self._ef)}|{self.chunking.key()}"

    def _sync_cross_language(self, adrs: Sequence[Adr]) -> list[str]:
        """Bring the second vector set up to date when it is wanted; what to tell the user if not."""
        self.xl_active = False
        if self.multilingual == "off":
            return []
        languages: set[str] = {a.language for a in adrs}
        hashes = {a.path: a.content_hash for a in adrs}
        save_languages(self.store_dir, self.collection_name, hashes, languages)
        wanted, note = xl_wanted(self.multilingual, languages, self._xl.model)
        if not wanted:
            return [note] if note else []
        try:
            self._xl.sync(adrs)
        except EmbeddingError as exc:
            model = self._xl.model
            log.warning("cross-language channel (%s) failed, no cross-language slots: %s", model, exc)
            return [f"cross-language recall ({model}) is off: {exc}"]
        self.xl_active = True
        return []

    def _xl_unchanged(self, hashes: Mapping[str, str]) -> bool | None:
        """For a no-op sync: whether the cross-language set is active, None when a sync is needed."""
        if self.multilingual == "off":
            return False
        languages = load_languages(self.store_dir, self.collection_name, hashes)
        if languages is None:
            return None
        wanted, _note = xl_wanted(self.multilingual, languages, self._xl.model)
        if not wanted:
            return False
        return True if self._xl.holds(hashes) else None

    def _meta(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "embedding": self.embedding,
            "embedding_fingerprint": fingerprint(self._ef),
            "chunking": self.chunking.key(),
            "adr_dir": self.adr_dir or "-",
        }

    def _open_collection(self) -> bool:
        """Get or create the collection (rebuilt when its embedding or chunking changed)."""
        self._collection, rebuilt, self._fresh_collection = chroma_store.open_collection(
            self._client, self.collection_name, self._chroma_ef, self._meta(), hnsw=_HNSW
        )
        return rebuilt

    def _load_mirror(self) -> tuple[IndexMirror, bool]:
        """The mirror of the open collection and whether it needs no check (index_mirror.mirror_of)."""
        m, config = self._mirror, self._config_key()
        if (
            not self._fresh_collection
            and m
            and (m.collection_id, m.config) == (str(self._collection.id), config)
        ):
            return m, False
        return mirror_of(
            self._collection, self.store_dir, self.collection_name, config, fresh=self._fresh_collection
        )

    def _mirror_from_collection(self) -> IndexMirror:
        return self._save_mirror(*IndexMirror.read_collection(self._collection))

    def _apply(
        self,
        mirror: IndexMirror,
        current: dict[str, Adr],
        stale: Sequence[str],
        todo: Sequence[Adr],
        progress: Progress | None,
        embedded: set[str],
        prepared: IndexPrep | None,
    ) -> IndexMirror:
        """Delete the stale chunks, embed and add `todo`, write the new mirror. On an EmbeddingError
        the mirror of what did get stored is written (self._mirror) before it propagates."""
        IndexMirror.drop(self.store_dir, self.collection_name)  # no mirror while the collection changes
        stale_ids = [cid for p in stale for cid in mirror.chunk_ids(p)]
        stale_ids += prepared.strays(current) if prepared is not None else []
        for i in range(0, len(stale_ids), _DELETE_BATCH):
            self._collection.delete(ids=stale_ids[i : i + _DELETE_BATCH])
        gone = set(stale)
        docs = [
            (p, h, mirror.rows(p))
            for p, h in zip(mirror.paths, mirror.hashes, strict=True)
            if p in current and p not in gone
        ]
        partial: dict[str, list[str]] = {}
        kept = len(docs)
        try:
            add_chunks(self._collection, self._ef, self.chunking, todo, progress, docs, partial, prepared)
        except EmbeddingError:
            embedded.update(p for p, _h, _v in docs[kept:])
            self._save_mirror(docs, partial)
            raise
        embedded.update(p for p, _h, _v in docs[kept:])
        return self._save_mirror(docs, partial)

    def _save_mirror(
        self, docs: list[tuple[str, str, np.ndarray]], partial: dict[str, list[str]]
    ) -> IndexMirror:
        config = self._config_key()
        self._mirror = save_mirror(
            self._collection, self.store_dir, self.collection_name, config, docs, partial
        )
        return self._mirror
