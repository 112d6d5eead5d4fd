"""The index mirror beside the collection: a no-op sync reads no chunk, dense scores are the exact
best-chunk cosines, and a mirror that is missing or behind the collection is rebuilt from it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from chromadb.api.models.Collection import Collection

from adr_review.adapters.adr_files import load_adr_folder
from adr_review.adapters.chroma_store import chroma_client, collection_name_for
from adr_review.adapters.embeddings import embed_texts
from adr_review.adapters.index import ChromaAdrIndex
from adr_review.adapters.index_mirror import IndexMirror
from adr_review.config import RetrievalConfig
from adr_review.core.chunking import ChunkParams

ADRS = {
    "0001-record-decisions.md": "# 1. Record architecture decisions\n\n## Context\n\n"
    "We need to record the architectural decisions made on this project.\n\n## Decision\n\n"
    "We will use Architecture Decision Records, as described by Michael Nygard.\n",
    "0002-use-postgres.md": "# 2. Use PostgreSQL for orders\n\n## Context\n\n"
    "The order service needs transactions across several tables and reliable backups.\n\n## Decision\n\n"
    "Use PostgreSQL 16 as the primary database of the order service.\n",
    "0003-kafka-events.md": "# 3. Publish domain events on Kafka\n\n## Context\n\n"
    "Services need to react to order changes without polling the database.\n\n## Decision\n\n"
    "Publish domain events on Kafka topics, one topic per aggregate, retained seven days.\n",
    "0004-イベント駆動.md": "# 4. イベント駆動アーキテクチャの採用\n\n## コンテキスト\n\n"
    "サービス間の連携をポーリングではなくドメインイベントで行いたい。\n\n## 決定\n\n"
    "Kafka を使ってドメインイベントを配信する。\n",
}
SMALL = ChunkParams(target=200, maximum=300)  # several chunks per ADR: "best chunk" means something


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "adr"
    d.mkdir()
    for name, text in ADRS.items():
        (d / name).write_text(text, encoding="utf-8")
    return d


def index_for(folder: Path, store: Path) -> ChromaAdrIndex:
    return ChromaAdrIndex(store, collection_name_for(folder), chunking=SMALL, adr_dir=str(folder))


def synced(folder: Path, store: Path) -> tuple[ChromaAdrIndex, object]:
    index = index_for(folder, store)
    adrs, errors = load_adr_folder(folder)
    assert not errors
    return index, index.sync(adrs)


def test_a_no_op_sync_and_a_search_read_no_chunk_from_the_collection(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    synced(folder, store)

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the collection was read")

    for method in ("get", "query", "count", "peek"):
        monkeypatch.setattr(Collection, method, refuse)
    index, report = synced(folder, store)
    assert report.unchanged == 4  # type: ignore[attr-defined]
    top = index.search("Publish order domain events to Kafka").candidates[0]
    assert top.adr.path == "0003-kafka-events.md" and top.dense is not None


def test_dense_scores_are_every_adrs_best_chunk_cosine(folder: Path, tmp_path: Path) -> None:
    index, _ = synced(folder, tmp_path / "store")
    query = "Kafka topics for domain events between services"
    # the reference: every chunk in the collection, scored by Chroma, grouped per ADR
    qvec = embed_texts(index._ef, [query])
    everything = index._collection.query(
        query_embeddings=qvec, n_results=index._collection.count(), include=["metadatas", "distances"]
    )
    per_adr: dict[str, list[float]] = {}
    for meta, dist in zip(everything["metadatas"][0], everything["distances"][0], strict=True):
        per_adr.setdefault(str(meta["path"]), []).append(1.0 - dist)
    assert index.dense_temperature == RetrievalConfig().dense_temperature == 0.0  # the best chunk
    t = index.dense_temperature = 0.02
    soft = {
        p: max(c) + t * math.log(sum(math.exp((x - max(c)) / t) for x in c) / len(c))
        for p, c in per_adr.items()
    }
    assert {s.adr.path: s.dense for s in index.score(query).scores} == pytest.approx(soft, abs=1e-5)
    index.dense_temperature = 0.0  # the best chunk's cosine
    best = {p: max(c) for p, c in per_adr.items()}
    assert {s.adr.path: s.dense for s in index.score(query).scores} == pytest.approx(best, abs=1e-5)
    assert len(index._collection.get(include=[])["ids"]) > len(ADRS)  # several chunks per ADR
    assert any(len(c) > 1 and soft[p] < best[p] for p, c in per_adr.items())  # the two differ


def test_a_sync_that_died_before_writing_the_mirror_is_repaired_from_the_collection(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    synced(folder, store)
    path = folder / "0002-use-postgres.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nAmended: logical replication for reports.\n")

    def crash(*_a: object, **_k: object) -> None:
        raise RuntimeError("killed")

    with monkeypatch.context() as m:
        m.setattr(IndexMirror, "write", crash)
        with pytest.raises(RuntimeError, match="killed"):
            synced(folder, store)  # the collection changed, the mirror was not written
    assert IndexMirror.load(store, collection_name_for(folder)) is None
    index, report = synced(folder, store)
    # the collection itself says the change is in: nothing to redo
    assert (report.added, report.updated, report.unchanged) == (0, 0, 4)  # type: ignore[attr-defined]
    top = index.search("logical replication for reports").candidates[0]
    assert top.adr.path == "0002-use-postgres.md"


def test_a_collection_changed_behind_the_mirror_is_re_read_before_a_change(
    folder: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    synced(folder, store)
    # another writer (an older version, a script) removes an ADR's chunks without the mirror knowing
    col = chroma_client(store).get_collection(collection_name_for(folder), embedding_function=None)
    col.delete(where={"path": "0001-record-decisions.md"})
    (folder / "0005-cache.md").write_text("# 5. Cache with Redis\n\n## Context\n\nReads are slow.\n")
    index, report = synced(folder, store)
    assert (report.added, report.unchanged) == (2, 3)  # type: ignore[attr-defined]  # 0001 is back
    paths = {m["path"] for m in index._collection.get(include=["metadatas"])["metadatas"]}
    assert paths == {*ADRS, "0005-cache.md"}
    top = index.search("record the architectural decisions").candidates[0]
    assert top.adr.path == "0001-record-decisions.md" and top.dense is not None


def test_the_mirror_is_one_manifest_and_one_matrix(folder: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    index, _ = synced(folder, store)
    (folder / "0003-kafka-events.md").unlink()
    adrs, _ = load_adr_folder(folder)
    index.sync(adrs)
    name = collection_name_for(folder)
    assert len(list(store.glob(f"index-{name}.*.npy"))) == 1  # the older matrix is gone
    mirror = IndexMirror.load(store, name)
    assert mirror is not None and sorted(mirror.paths) == sorted(a.path for a in adrs)
    assert mirror.vectors.shape == (index._collection.count(), 2048)
    assert np.allclose(np.linalg.norm(mirror.vectors, axis=1), 1.0, atol=1e-5)
