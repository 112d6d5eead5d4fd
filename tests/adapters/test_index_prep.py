"""A cold index embeds, counts and writes while the folder is parsed (index_prep.py): the store it
leaves (collection, mirror, lexical counts) is the one a sync in one process leaves, and what the
workers did is not done again here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from adr_review.adapters import index as index_module
from adr_review.adapters import index_write, lexical_cache, parse_pool
from adr_review.adapters.embeddings import OfflineHashEmbedding, runs_anywhere
from adr_review.adapters.index_mirror import IndexMirror
from adr_review.adapters.index_open import ensure_synced, open_index, open_index_for
from adr_review.adapters.index_prep import IndexPrep, pieces_of
from adr_review.core.adr import Adr, parse_adr
from adr_review.core.chunking import ChunkParams
from adr_review.core.lexical import TermCounts

N = 2 * parse_pool.MIN_PARALLEL


def _write_folder(root: Path, n: int = N, version: str = "") -> Path:
    root.mkdir(exist_ok=True)
    for i in range(n):
        reasons = "\n\n".join(
            f"Reason {k} for decision {i}{version}: queue {i % 7} and cache {k}." for k in range(i % 5)
        )
        (root / f"{i:04d}-decision-{i}.md").write_text(
            f"# {i}. Decision {i}{version}\n\nStatus: accepted\n\n## Context\n\n{reasons or 'Short.'}\n\n"
            f"## Decision\n\nWe use tool {i % 11} for service {i}.\n"
        )
    (root / "0999-empty.md").write_text("  \n")  # a parse error among them
    return root


def _state(store: Path) -> dict[str, Any]:
    """What a store holds, independent of the collection's id and of write order."""
    index = open_index(store, collection=_only_collection(store))
    index._open_collection()
    got = index._collection.get(include=["metadatas", "embeddings"])
    order = np.argsort(got["ids"])
    mirror = IndexMirror.load(store, index.collection_name)
    assert mirror is not None
    counts = lexical_cache._read(index._lexical_path)
    assert counts is not None
    return {
        "ids": [got["ids"][i] for i in order],
        "metas": [got["metadatas"][i] for i in order],
        "vectors": np.asarray(got["embeddings"], dtype=np.float32)[order].tobytes(),
        "mirror": (mirror.paths, mirror.hashes, mirror.vectors.tobytes(), mirror.collection_count),
        "lexical": (counts[0], counts[1].vocab, counts[1].terms.tobytes(), counts[1].counts.tobytes()),
    }


def _only_collection(store: Path) -> str:
    (mirror,) = store.glob("index-*.json")
    return mirror.stem[len("index-") :]


def _sync(folder: Path, store: Path, progress: list[tuple[int, int]] | None = None) -> Any:
    index = open_index_for(folder, store)
    return ensure_synced(
        index, folder, progress=(lambda d, t: progress.append((d, t))) if progress is not None else None
    )


class _Calls:
    """Calls made in this process (a forked worker's calls land in its own copy)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.main = os.getpid()
        self.embedded = 0
        self.counted = 0
        self.early = 0
        self.upserted = 0  # chunk ids written, early or by the sync
        embed, of, write = index_write.embed_texts, TermCounts.of.__func__, index_module.write_rows  # type: ignore[attr-defined]

        def embed_here(ef: Any, texts: Any) -> Any:
            self.embedded += len(texts) if os.getpid() == self.main else 0
            return embed(ef, texts)

        def count_here(cls: type[TermCounts], texts: Any) -> TermCounts:
            texts = list(texts)
            self.counted += len(texts) if os.getpid() == self.main else 0
            return of(cls, texts)

        def write_here(collection: Any, rows: Any) -> None:
            self.early += len(rows)
            write(collection, rows)

        from chromadb.api.models.Collection import Collection

        upsert = Collection.upsert

        def upsert_here(collection: Any, **kw: Any) -> None:
            self.upserted += len(kw["ids"])
            upsert(collection, **kw)

        monkeypatch.setattr(Collection, "upsert", upsert_here)
        monkeypatch.setattr(index_write, "embed_texts", embed_here)
        monkeypatch.setattr(TermCounts, "of", classmethod(count_here))
        monkeypatch.setattr(index_module, "write_rows", write_here)


@pytest.fixture
def reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The store a cold index parsed in this one process leaves."""
    folder = _write_folder(tmp_path / "ref-adr")
    with monkeypatch.context() as m:
        m.setattr(parse_pool, "usable_cores", lambda: 1)
        _sync(folder, tmp_path / "ref-store")
    return _state(tmp_path / "ref-store")


def test_a_cold_index_parsed_in_workers_stores_what_one_process_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict[str, Any], two_cores: None
) -> None:
    folder = _write_folder(tmp_path / "adr")
    calls = _Calls(monkeypatch)
    progress: list[tuple[int, int]] = []
    synced = _sync(folder, tmp_path / "store", progress)
    assert synced.report.added == N and [e.split(":")[0] for e in synced.report.errors] == ["0999-empty.md"]
    assert _state(tmp_path / "store") == reference
    assert (calls.embedded, calls.counted) == (0, 0)  # every vector and count was made in a worker
    total = len(reference["ids"])
    assert (calls.early, calls.upserted) == (N, total)  # written while the others were parsed, once
    assert progress[-1] == (total, total)


def test_a_store_that_cannot_be_written_early_is_written_by_the_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict[str, Any], two_cores: None
) -> None:
    def refuse(collection: Any, rows: Any) -> None:
        raise OSError("disk full for a moment")

    monkeypatch.setattr(index_module, "write_rows", refuse)
    synced = _sync(_write_folder(tmp_path / "adr"), tmp_path / "store")
    assert synced.report.added == N
    assert _state(tmp_path / "store") == reference


def test_an_index_that_exists_is_changed_by_the_sync_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_cores: None
) -> None:
    """Many changed files are parsed in workers, but only a collection this sync creates is written
    early: an existing one is diffed against the mirror first (stale chunks deleted, then added)."""
    folders = {name: _write_folder(tmp_path / f"{name}-adr") for name in ("one", "pool")}
    with monkeypatch.context() as m:
        m.setattr(parse_pool, "usable_cores", lambda: 1)
        for name, folder in folders.items():
            _sync(folder, tmp_path / f"{name}-store")
            _write_folder(folder, version=" (revised)")
        _sync(folders["one"], tmp_path / "one-store")
    calls = _Calls(monkeypatch)
    report = _sync(folders["pool"], tmp_path / "pool-store").report
    assert (report.updated, calls.early, calls.embedded) == (N, 0, 0)
    assert calls.upserted == len(_state(tmp_path / "one-store")["ids"])
    assert _state(tmp_path / "pool-store") == _state(tmp_path / "one-store")


def _adr(path: str, body: str) -> Adr:
    return parse_adr(path, body.encode())


def test_chunks_written_early_for_adrs_the_sync_does_not_hold_are_deleted(tmp_path: Path) -> None:
    small = ChunkParams(target=60, maximum=80)  # several chunks each
    long_old = _adr(
        "0002-b.md", "# 2. B\n\n" + "\n\n".join(f"Old paragraph {k} of B, long enough." for k in range(6))
    )
    gone = _adr("0003-c.md", "# 3. C\n\nA file deleted while the folder was read.\n")
    keep = _adr("0001-a.md", "# 1. A\n\nUse Kafka for events between the services.\n")
    new = _adr("0002-b.md", "# 2. B\n\nNew and short.\n")
    index = index_module.ChromaAdrIndex(tmp_path / "store", "adrs", chunking=small)
    prep = index.preparation()
    prep.keep(prep.run([keep, long_old, gone]))  # as a worker's share would
    assert prep.stored(keep) and prep.stored(long_old) and not prep.stored(new)
    report = index.sync([keep, new], prepared=prep)
    assert (report.added, report.removed) == (2, 0)
    stored = sorted(index._collection.get()["ids"])
    expected = [f"{a.path}::{k}" for a in (keep, new) for k in range(len(pieces_of(a, small)))]
    assert stored == sorted(expected)
    mirror = IndexMirror.load(tmp_path / "store", "adrs")
    assert mirror is not None and mirror.collection_count == len(stored)
    assert mirror.stored_hashes() == {keep.path: keep.content_hash, new.path: new.content_hash}


class _Remote:
    """An embedder that is a model or a service: not run in the parse workers."""

    def __call__(self, input: list[str]) -> Any:
        return [np.ones(4, dtype=np.float32) for _ in input]

    @staticmethod
    def name() -> str:
        return "remote"

    def get_config(self) -> dict[str, Any]:
        return {}


def test_only_an_embedder_that_is_plain_computation_runs_in_a_worker() -> None:
    assert runs_anywhere(OfflineHashEmbedding()) and not runs_anywhere(_Remote())
    adr = _adr("0001-a.md", "# 1. A\n\nUse Kafka.\n")
    for embedder, vectors in ((OfflineHashEmbedding(), 1), (_Remote(), 0)):
        prep = IndexPrep(embedder, ChunkParams())
        result = prep.run([adr])
        assert len(result.vectors) == vectors and result.hashes == (adr.content_hash,)
        prep.keep(result)
        assert (prep.vectors(adr, 1) is not None) == bool(vectors)
        assert prep.vectors(adr, 2) is None  # another chunking of the same bytes: not these vectors
        assert prep.counts()[0][1].vocab == TermCounts.of([adr.text]).vocab


def test_a_result_that_is_not_a_share_is_ignored() -> None:
    prep = IndexPrep(OfflineHashEmbedding(), ChunkParams())
    prep.keep("not a share")
    assert prep.counts() == []
