"""The index mirror: what the Chroma collection of an ADR folder holds, kept beside it.

For every ADR whose chunks are all in the collection: its path, content hash and chunk vectors (one
float32 matrix, memory-mapped, an ADR's chunks in consecutive rows); for every ADR only partly written
(an embedding that failed mid-way): the ids of the chunks that are there. Two uses:

- a sync compares the folder with the mirror, so a no-op sync reads nothing from the collection and
  a changed one deletes by id and adds only what changed;
- dense search is one matrix product over every chunk (`best_cosines`): each ADR in scope gets its
  exact best-chunk cosine, the score a Chroma query for every chunk gave, in milliseconds, where that
  query was most of a recall's time and failed past SQLite's 32,766 variables. Every ADR needs its
  score: fusion min-max-normalises the cosines over the whole scope (app/adr_review/core/fusion.py), so the
  top K chunks alone would change the ranking.

The collection stays the source of truth: the mirror names it (id, configuration) and its chunk
count; the index deletes the mirror before it changes the collection and writes a new one after, so
a sync that dies in between leaves none and the next one rebuilds it from the collection (paged
reads, `read_collection`). Files: index-<collection>.json and the .npy matrix it names; every write
takes a new matrix name, so a reader never sees a half-written one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adr_review.core.chunk_scores import chunk_scores

log = logging.getLogger("adr_review.index")

FORMAT = "adr-review-index-mirror/1"
PAGE = 2_000  # chunks per Chroma read when the whole collection must be walked


def chunk_id(path: str, k: int) -> str:
    """The id of an ADR's k-th chunk in the collection (the mirror and a collection read rely on it)."""
    return f"{path}::{k}"


@dataclass
class IndexMirror:
    collection_id: str
    config: str  # embedding fingerprint + chunking: what the vectors were made with
    paths: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))  # rows of ADR i
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    partial: dict[str, list[str]] = field(default_factory=dict)  # path -> chunk ids stored
    collection_count: int = 0  # chunks in the collection when the mirror was written

    def __post_init__(self) -> None:
        self._row = {p: i for i, p in enumerate(self.paths)}

    # --- what is stored ------------------------------------------------------------------------

    def stored_hashes(self) -> dict[str, str]:
        """Path -> content hash of every ADR with chunks in the collection; "" for a partial one."""
        out = dict(zip(self.paths, self.hashes, strict=True))
        out.update(dict.fromkeys(self.partial, ""))
        return out

    def diff(self, current: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
        """(removed, updated, added) paths of a folder (path -> Adr) against what is stored."""
        stored = self.stored_hashes()
        removed = [p for p in stored if p not in current]
        updated = [p for p, a in current.items() if p in stored and stored[p] != a.content_hash]
        added = [p for p in current if p not in stored]
        return removed, updated, added

    def chunk_ids(self, path: str) -> list[str]:
        if path in self.partial:
            return list(self.partial[path])
        i = self._row.get(path)
        if i is None:
            return []
        return [chunk_id(path, k) for k in range(int(self.offsets[i + 1] - self.offsets[i]))]

    def has_vectors(self, paths: Iterable[str]) -> bool:
        return any(p in self._row for p in paths)

    def rows(self, path: str) -> np.ndarray:
        i = self._row[path]
        return self.vectors[int(self.offsets[i]) : int(self.offsets[i + 1])]

    # --- dense scoring ---------------------------------------------------------------------------

    def best_cosines(
        self, query_vector: np.ndarray, paths: Iterable[str], temperature: float = 0.0
    ) -> dict[str, float]:
        """Each ADR's dense score with the (unit) query vector, for the given paths it holds: its best
        chunk's cosine, or with a temperature the soft maximum over its chunks (app/adr_review/core/chunk_scores.py)."""
        if len(self.vectors) == 0:
            return {}
        cosines = self.vectors @ np.asarray(query_vector, dtype=self.vectors.dtype)
        best = chunk_scores(cosines, self.offsets, temperature)  # every ADR has at least one chunk
        return {p: float(best[i]) for p in paths if (i := self._row.get(p)) is not None}

    def mean_vectors(self, paths: Iterable[str]) -> dict[str, np.ndarray]:
        """Each ADR's chunk vectors averaged and made unit length (document similarity for MMR)."""
        out = {}
        for p in paths:
            if p in self._row:
                v = self.rows(p).astype(np.float64).sum(axis=0)
                out[p] = v / (np.linalg.norm(v) or 1.0)
        return out

    # --- files -----------------------------------------------------------------------------------

    @staticmethod
    def manifest_path(store_dir: Path, collection: str) -> Path:
        return Path(store_dir) / f"index-{collection}.json"

    @classmethod
    def load(cls, store_dir: Path, collection: str) -> IndexMirror | None:
        """The mirror written last, or None (missing, unreadable, or not this format)."""
        manifest = cls.manifest_path(store_dir, collection)
        try:
            raw = json.loads(manifest.read_text(encoding="utf-8"))
            if raw.get("format") != FORMAT:
                return None
            offsets = np.asarray(raw["offsets"], dtype=np.int64)
            vectors = np.load(manifest.parent / str(raw["vectors"]), mmap_mode="r", allow_pickle=False)
            if vectors.ndim != 2 or len(vectors) != int(offsets[-1]):
                return None
            return cls(
                collection_id=str(raw["collection_id"]),
                config=str(raw["config"]),
                paths=[str(p) for p in raw["paths"]],
                hashes=[str(h) for h in raw["hashes"]],
                offsets=offsets,
                vectors=vectors,
                partial={str(p): [str(c) for c in ids] for p, ids in raw["partial"].items()},
                collection_count=int(raw["collection_count"]),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    @classmethod
    def drop(cls, store_dir: Path, collection: str) -> None:
        """Before the collection changes: no mirror until the change is complete (see module doc)."""
        with contextlib.suppress(FileNotFoundError):
            cls.manifest_path(store_dir, collection).unlink()

    @classmethod
    def write(
        cls,
        store_dir: Path,
        collection: str,
        *,
        collection_id: str,
        config: str,
        docs: Sequence[tuple[str, str, np.ndarray]],
        partial: Mapping[str, list[str]],
        collection_count: int,
    ) -> IndexMirror:
        """Write a mirror of (path, content hash, chunk vectors) per complete ADR, in row order: the
        matrix under a new name (streamed: the rows of unchanged ADRs come from the old matrix's map),
        then the manifest (atomic replace), then older matrices go. Returns the mirror as written;
        one that cannot be written is kept in memory only (the next sync rebuilds it)."""
        store = Path(store_dir)
        sizes = [len(v) for _p, _h, v in docs]
        dim = next((int(v.shape[1]) for _p, _h, v in docs if len(v)), 0)
        offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        paths = [p for p, _h, _v in docs]
        hashes = [h for _p, h, _v in docs]
        name = f"index-{collection}.{uuid.uuid4().hex[:12]}.npy"
        try:
            store.mkdir(parents=True, exist_ok=True)
            with (store / name).open("wb") as f:
                header = {"descr": "<f4", "fortran_order": False, "shape": (int(offsets[-1]), dim)}
                np.lib.format.write_array_header_1_0(f, header)
                for _p, _h, v in docs:
                    f.write(np.ascontiguousarray(v, dtype="<f4").tobytes())
            manifest = {
                "format": FORMAT,
                "collection_id": collection_id,
                "config": config,
                "collection_count": collection_count,
                "vectors": name,
                "paths": paths,
                "hashes": hashes,
                "offsets": [int(x) for x in offsets],
                "partial": dict(partial),
            }
            target = cls.manifest_path(store, collection)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, target)
            vectors = np.load(store / name, mmap_mode="r", allow_pickle=False)
        except OSError as exc:
            log.warning("index mirror %s not written (%s): the next sync rebuilds it", collection, exc)
            with contextlib.suppress(OSError):
                (store / name).unlink()
            vectors = np.zeros((int(offsets[-1]), dim), dtype=np.float32)
            for (_p, _h, v), lo in zip(docs, offsets[:-1], strict=True):
                vectors[int(lo) : int(lo) + len(v)] = v
        else:
            for old in store.glob(f"index-{collection}.*.npy"):
                if old.name != name:
                    with contextlib.suppress(OSError):
                        old.unlink()
        return cls(collection_id, config, paths, hashes, offsets, vectors, dict(partial), collection_count)

    # --- recovery --------------------------------------------------------------------------------

    @staticmethod
    def read_collection(collection: Any) -> tuple[list[tuple[str, str, np.ndarray]], dict[str, list[str]]]:
        """(complete ADRs as (path, hash, vectors), partial ADRs as path -> chunk ids) from the
        collection itself, read in pages: the recovery path when there is no usable mirror."""
        chunks: dict[str, dict[int, tuple[str, np.ndarray]]] = {}
        hashes: dict[str, set[str]] = {}
        expected: dict[str, int] = {}
        ids_of: dict[str, list[str]] = {}
        for ids, metas, vectors in _pages(collection):
            for cid, meta, vec in zip(ids, metas, vectors, strict=True):
                path = str(meta["path"])
                ids_of.setdefault(path, []).append(cid)
                hashes.setdefault(path, set()).add(str(meta["content_hash"]))
                expected[path] = int(meta.get("chunks", 0) or 0)
                chunks.setdefault(path, {})[int(meta.get("chunk", 0))] = (cid, np.asarray(vec))
        docs = []
        partial = {}
        for path in sorted(chunks):
            got, n = chunks[path], expected[path]
            complete = (
                n > 0
                and len(hashes[path]) == 1
                and len(ids_of[path]) == n
                and all(k in got and got[k][0] == chunk_id(path, k) for k in range(n))
            )
            if complete:
                vecs = np.stack([got[k][1] for k in range(n)]).astype(np.float32)
                docs.append((path, next(iter(hashes[path])), vecs))
            else:  # mixed versions or half-written: the next sync deletes and re-embeds it
                partial[path] = ids_of[path]
        return docs, partial


def mirror_of(
    collection: Any, store_dir: Path, name: str, config: str, *, fresh: bool
) -> tuple[IndexMirror, bool]:
    """The mirror of an open collection, and whether it was read from the collection just now (one
    from disk is checked against the collection's chunk count before the collection changes): empty
    for a collection just created, the file when it names this collection, else rebuilt from it."""
    if fresh:
        IndexMirror.drop(store_dir, name)
        return IndexMirror(str(collection.id), config), True
    mirror = IndexMirror.load(store_dir, name)
    if mirror is not None and (mirror.collection_id, mirror.config) == (str(collection.id), config):
        return mirror, False
    return save_mirror(collection, store_dir, name, config, *IndexMirror.read_collection(collection)), True


def save_mirror(
    collection: Any,
    store_dir: Path,
    name: str,
    config: str,
    docs: Sequence[tuple[str, str, np.ndarray]],
    partial: Mapping[str, list[str]],
) -> IndexMirror:
    """Write the mirror of `collection` as it now is: these complete ADRs (any order) and partial ones."""
    return IndexMirror.write(
        store_dir,
        name,
        collection_id=str(collection.id),
        config=config,
        docs=sorted(docs, key=lambda d: d[0]),
        partial=partial,
        collection_count=int(collection.count()),
    )


def _pages(collection: Any) -> Iterator[tuple[list[str], list[Mapping[str, Any]], Any]]:
    """Every chunk's id, metadata and vector, PAGE at a time (one read of everything exceeds SQLite's
    limit on variables past 32,766 chunks)."""
    offset = 0
    while True:
        got = collection.get(include=["metadatas", "embeddings"], limit=PAGE, offset=offset)
        ids = list(got["ids"])
        if not ids:
            return
        yield ids, list(got["metadatas"] or []), got["embeddings"]
        offset += len(ids)
