"""The part of a sync that needs only the ADRs, done where they are parsed.

A cold index of a large folder parses it on the machine's cores (parse_pool.py), then embeds every
chunk and counts every ADR's terms in one process, then writes the store: on two cores the one-core
middle was a third of the time. `IndexPrep` is that middle, run by each parse worker on the ADRs it
has just parsed, so it is spread over the same cores; the sync takes what it finds here and computes
the rest itself, exactly as without it (same functions, same inputs: the same vectors and counts).

Only an embedder that is plain computation runs in a worker (`runs_anywhere`): one that loads a
model or calls a service would do so once per worker. A result is keyed by the ADR's path and
content hash, so an ADR that changed, or was parsed in this process, is simply not found.

The store write is a cold index's other large step, and this process is idle while the workers
parse: so each share's vectors are handed to `store` as they arrive (the index writes them when it
is creating its collection, index.py `_store_early`), and the sync skips the ADRs it reports stored.
A store that fails is not asked again; the sync then writes those ADRs, and fails where it belongs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from adr_review.adapters.embeddings import Embedder, embed_texts, runs_anywhere
from adr_review.adapters.index_mirror import chunk_id
from adr_review.core.adr import Adr
from adr_review.core.chunking import ChunkParams, chunk_text
from adr_review.core.lexical import TermCounts

log = logging.getLogger("adr_review.index")


def pieces_of(adr: Adr, chunking: ChunkParams) -> list[str]:
    """The texts an ADR is stored as (one vector each): its chunks, else its title or path."""
    return chunk_text(adr.text, adr.title, chunking) or [adr.title or adr.path]


@dataclass(frozen=True)
class ShareResult:
    """One worker's share: each ADR's chunk vectors (when the embedder runs anywhere) and the
    share's term counts, rows in the order of `hashes`."""

    vectors: tuple[tuple[str, str, np.ndarray], ...]  # (path, content hash, one row per piece)
    hashes: tuple[str, ...]
    counts: TermCounts


class IndexPrep:
    """Collects the shares' results (parse_pool.SideWork: `run` in a worker, `keep` here)."""

    def __init__(
        self,
        embedder: Embedder,
        chunking: ChunkParams,
        store: Callable[[Sequence[tuple[str, str, np.ndarray]]], bool] | None = None,
    ) -> None:
        self._embedder = embedder if runs_anywhere(embedder) else None
        self._chunking = chunking
        self._store = store  # writes (path, hash, vectors) rows; False: it will not (not a cold index)
        self._vectors: dict[tuple[str, str], np.ndarray] = {}
        self._stored: set[tuple[str, str]] = set()
        self._counts: list[tuple[Sequence[str], TermCounts]] = []

    def run(self, adrs: Sequence[Adr]) -> ShareResult:
        vectors: list[tuple[str, str, np.ndarray]] = []
        if self._embedder is not None:
            for adr in adrs:
                vectors.append(
                    (adr.path, adr.content_hash, embed_texts(self._embedder, pieces_of(adr, self._chunking)))
                )
        counts = TermCounts.of(a.text for a in adrs)
        return ShareResult(tuple(vectors), tuple(a.content_hash for a in adrs), counts)

    def keep(self, result: object) -> None:
        if not isinstance(result, ShareResult):
            log.debug("index preparation: a share gave %s, ignored", type(result).__name__)
            return
        for path, content_hash, matrix in result.vectors:
            self._vectors[(path, content_hash)] = matrix
        self._counts.append((result.hashes, result.counts))
        if self._store is not None and result.vectors:
            try:
                wrote = self._store(result.vectors)
            except Exception as exc:  # noqa: BLE001 - the sync writes them, and reports what fails
                log.debug("index preparation: storing a share early failed: %s", exc)
                wrote = False
            if wrote:
                self._stored.update((p, h) for p, h, _m in result.vectors)
            else:
                self._store = None

    def vectors(self, adr: Adr, pieces: int) -> np.ndarray | None:
        """The ADR's chunk vectors, when a worker embedded these very bytes into as many pieces."""
        got = self._vectors.get((adr.path, adr.content_hash))
        return got if got is not None and got.shape[0] == pieces else None

    def stored(self, adr: Adr) -> bool:
        """Whether this ADR's chunk vectors were written to the store already (`store`)."""
        return (adr.path, adr.content_hash) in self._stored

    def strays(self, current: Mapping[str, Adr]) -> list[str]:
        """Chunk ids written early for an ADR the sync does not hold at those bytes (to delete)."""
        return [
            chunk_id(path, i)
            for path, content_hash in sorted(self._stored)
            if (adr := current.get(path)) is None or adr.content_hash != content_hash
            for i in range(len(self._vectors[(path, content_hash)]))
        ]

    def counts(self) -> list[tuple[Sequence[str], TermCounts]]:
        """Term counts computed in the workers: (row content hashes, counts) per share."""
        return list(self._counts)
