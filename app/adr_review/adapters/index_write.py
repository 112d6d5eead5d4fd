"""Writing ADRs' chunks into the index's Chroma collection: ids, metadata, vectors, in batches.

A chunk's id is `path::k`; its metadata says whose it is, at which bytes, and which of how many
(index_mirror.py reads a collection back from it, and tells a half-written ADR by it). Vectors that
were made already (index_prep.py: in the parse workers) are not embedded again, and ADRs whose
chunks were written already are only recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adr_review.adapters.embeddings import Embedder, embed_texts
from adr_review.adapters.index_mirror import chunk_id
from adr_review.adapters.index_prep import IndexPrep, pieces_of
from adr_review.core.adr import Adr
from adr_review.core.chunking import ChunkParams

BATCH = 512  # chunks per Chroma add: fewer, larger inserts are much cheaper
Progress = Callable[[int, int], None]  # (chunks embedded so far, chunks to embed)
Rows = Sequence[tuple[str, str, np.ndarray]]  # (path, content hash, one vector per chunk)


def chunk_meta(path: str, content_hash: str, chunk: int, chunks: int) -> dict[str, Any]:
    return {"path": path, "content_hash": content_hash, "chunk": chunk, "chunks": chunks}


def write_rows(collection: Any, rows: Rows) -> None:
    """Write complete ADRs whose vectors are known (a cold index's early write)."""
    ids = [chunk_id(path, i) for path, _h, matrix in rows for i in range(len(matrix))]
    metas = [chunk_meta(path, h, i, len(matrix)) for path, h, matrix in rows for i in range(len(matrix))]
    vectors = np.concatenate([matrix for _p, _h, matrix in rows])
    for lo in range(0, len(ids), BATCH):
        hi = min(lo + BATCH, len(ids))
        collection.upsert(ids=ids[lo:hi], embeddings=vectors[lo:hi], metadatas=metas[lo:hi])


def add_chunks(
    collection: Any,
    ef: Embedder,
    chunking: ChunkParams,
    adrs: Sequence[Adr],
    progress: Progress | None,
    done: list[tuple[str, str, np.ndarray]],
    partial: dict[str, list[str]],
    prepared: IndexPrep | None = None,
) -> None:
    """Embed and add in batches; `done` collects (path, hash, vectors) of every ADR whose chunks
    are all in, `partial` the chunk ids of one left half-written by a failure (an EmbeddingError or
    a store error propagates). What `prepared` holds is used: its vectors, its ADRs written already."""
    ids: list[str] = []
    docs: list[str] = []  # embedded, not stored: the ADR text lives in the folder
    metas: list[dict[str, Any]] = []
    ready: list[np.ndarray | None] = []  # per chunk, its vector when it was made already
    early = 0  # chunks written ahead of the sync
    for adr in adrs:
        pieces = pieces_of(adr, chunking)
        made = prepared.vectors(adr, len(pieces)) if prepared is not None else None
        if made is not None and prepared is not None and prepared.stored(adr):
            done.append((adr.path, adr.content_hash, made))  # in the collection already
            early += len(made)
            continue
        for i, piece in enumerate(pieces):
            ids.append(chunk_id(adr.path, i))
            docs.append(piece)
            metas.append(chunk_meta(adr.path, adr.content_hash, i, len(pieces)))
            ready.append(made[i] if made is not None else None)
    total = len(ids)
    if progress:
        progress(early, early + total)
    pending: dict[str, list[np.ndarray]] = {}
    try:
        for lo in range(0, total, BATCH):
            hi = min(lo + BATCH, total)
            vectors = _batch_vectors(ef, docs[lo:hi], ready[lo:hi])
            collection.upsert(ids=ids[lo:hi], embeddings=vectors, metadatas=metas[lo:hi])
            for vec, meta in zip(vectors, metas[lo:hi], strict=True):
                path = str(meta["path"])
                pending.setdefault(path, []).append(vec)
                if meta["chunk"] == meta["chunks"] - 1:
                    done.append((path, str(meta["content_hash"]), np.stack(pending.pop(path))))
            if progress:
                progress(early + hi, early + total)
    finally:
        for path, vecs in pending.items():
            partial[path] = [chunk_id(path, k) for k in range(len(vecs))]


def _batch_vectors(ef: Embedder, docs: Sequence[str], ready: Sequence[np.ndarray | None]) -> np.ndarray:
    """One batch's vectors: those made already, the others embedded now (in one call)."""
    missing = [k for k, v in enumerate(ready) if v is None]
    if len(missing) == len(ready):
        return embed_texts(ef, docs)
    fresh = iter(embed_texts(ef, [docs[k] for k in missing]) if missing else ())
    return np.stack([v if v is not None else next(fresh) for v in ready])
