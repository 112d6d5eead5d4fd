"""The Chroma-backed ADR index, for real (embedded Chroma in tmp_path, offline embedding)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

from adr_review.adapters.adr_files import load_adr_folder
from adr_review.adapters.chroma_store import chroma_client, collection_name_for
from adr_review.adapters.index import ChromaAdrIndex
from adr_review.adapters.index_open import ensure_synced, open_index, open_index_for
from adr_review.core.chunking import ChunkParams

ADRS = {
    "0001-record-decisions.md": "# 1. Record architecture decisions\n\n## Status\n\nAccepted\n\n## Context\n\n"
    "We need to record the architectural decisions made on this project.\n\n## Decision\n\n"
    "We will use Architecture Decision Records, as described by Michael Nygard.\n",
    "0002-use-postgres.md": "# 2. Use PostgreSQL for orders\n\n## Status\n\nAccepted\n\n## Context\n\n"
    "The order service needs transactions across several tables and reliable backups.\n\n## Decision\n\n"
    "Use PostgreSQL 16 as the primary database of the order service.\n",
    "0003-kafka-events.md": "# 3. Publish domain events on Kafka\n\n## Status\n\nAccepted\n\n## Context\n\n"
    "Services need to react to order changes without polling the database.\n\n## Decision\n\n"
    "Publish domain events on Kafka topics, one topic per aggregate, retained seven days.\n",
    "0004-イベント駆動.md": "# 4. イベント駆動アーキテクチャの採用\n\n## ステータス\n\n承認\n\n## コンテキスト\n\n"
    "サービス間の連携をポーリングではなくドメインイベントで行いたい。\n\n## 決定\n\n"
    "Kafka を使ってドメインイベントを配信する。\n",
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "adr"
    d.mkdir()
    for name, text in ADRS.items():
        (d / name).write_text(text, encoding="utf-8")
    return d


def index_for(folder: Path, store: Path, embedding: str | None = None, **kw: object) -> ChromaAdrIndex:
    return ChromaAdrIndex(store, collection_name_for(folder), embedding=embedding, adr_dir=str(folder), **kw)  # type: ignore[arg-type]


def sync(index: ChromaAdrIndex, folder: Path):  # noqa: ANN201 - SyncReport
    adrs, errors = load_adr_folder(folder)
    assert not errors
    return index.sync(adrs)


def test_first_sync_adds_everything_then_nothing_changes(folder: Path, tmp_path: Path) -> None:
    index = index_for(folder, tmp_path / "store")
    first = sync(index, folder)
    assert (first.added, first.updated, first.removed, first.unchanged) == (4, 0, 0, 0)
    assert first.embedding == "offline-hash" and not first.rebuilt and not first.errors
    again = sync(index, folder)
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 4)


def test_changing_one_adr_updates_only_it(folder: Path, tmp_path: Path) -> None:
    index = index_for(folder, tmp_path / "store")
    sync(index, folder)
    path = folder / "0002-use-postgres.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nAmended: use logical replication for reports.\n")
    report = sync(index, folder)
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 1, 0, 3)
    assert sync(index, folder).unchanged == 4


def test_deleting_an_adr_removes_its_chunks(folder: Path, tmp_path: Path) -> None:
    index = index_for(folder, tmp_path / "store")
    sync(index, folder)
    (folder / "0003-kafka-events.md").unlink()
    (folder / "0005-new.md").write_text("# 5. Cache with Redis\n\n## Context\n\nReads are slow.\n")
    report = sync(index, folder)
    assert (report.added, report.updated, report.removed, report.unchanged) == (1, 0, 1, 3)
    paths = {m["path"] for m in index._collection.get(include=["metadatas"])["metadatas"]}
    assert "0003-kafka-events.md" not in paths and "0005-new.md" in paths


def test_reopening_the_store_finds_the_index_without_warnings(folder: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    sync(index_for(folder, store), folder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reopened = index_for(folder, store)
        report = sync(reopened, folder)
        # a plain client, without our embedding function, rebuilds it from the stored config
        col = chroma_client(store).get_collection(collection_name_for(folder))
        assert col.configuration_json["embedding_function"]["name"] == "adr_review_offline_hash"
        hits = col.query(query_texts=["PostgreSQL database for orders"], n_results=1, include=["metadatas"])
        assert hits["metadatas"][0][0]["path"] == "0002-use-postgres.md"
    assert report.unchanged == 4 and report.added == 0
    assert [str(w.message) for w in caught] == []


def test_changing_the_embedding_rebuilds_and_a_failing_one_degrades_loudly(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    sync(index_for(folder, store), folder)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # not installed: cannot load
    broken = index_for(folder, store, embedding="sentence-transformers:some/model")
    report = sync(broken, folder)
    assert report.rebuilt and report.embedding == "sentence-transformers:some/model"
    assert report.added == 0  # nothing could be embedded: nothing counts as added
    assert any(
        "failed" in e and "sentence-transformers" in e and "4 ADR(s) not embedded" in e for e in report.errors
    )
    result = broken.search("PostgreSQL database for the order service transactions")
    assert result.diagnostics["embedding_failed"] is True
    assert "pip install" in result.diagnostics["embedding_error"]
    assert result.candidates[0].adr.path == "0002-use-postgres.md"  # lexical-only still answers
    assert all(c.dense is None for c in result.candidates)

    back = index_for(folder, store)
    report = sync(back, folder)
    assert report.rebuilt and report.added == 4 and not report.errors
    assert back.search("Kafka domain events").diagnostics["embedding_failed"] is False


def test_changing_the_chunking_rebuilds(folder: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    sync(index_for(folder, store), folder)
    report = sync(index_for(folder, store, chunking=ChunkParams(target=500, maximum=800)), folder)
    assert report.rebuilt and report.added == 4


def test_search_ranks_excludes_the_proposal_and_respects_the_pool(folder: Path, tmp_path: Path) -> None:
    index = index_for(folder, tmp_path / "store")
    sync(index, folder)
    query = "Publish order domain events to Kafka so services stop polling"
    result = index.search(query)
    paths = [c.adr.path for c in result.candidates]
    assert paths[0] == "0003-kafka-events.md"
    assert result.empty_reason is None and result.candidates[0].qualified
    assert result.diagnostics["embedding"] == "offline-hash"
    assert 0 < result.candidates[0].dense <= 1.0  # type: ignore[operator]
    excluded = index.search(query, exclude_paths=frozenset({"0003-kafka-events.md"}))
    assert "0003-kafka-events.md" not in [c.adr.path for c in excluded.candidates]
    pooled = index.search(query, pool=frozenset({"0001-record-decisions.md", "0002-use-postgres.md"}))
    assert {c.adr.path for c in pooled.candidates} <= {"0001-record-decisions.md", "0002-use-postgres.md"}
    assert pooled.diagnostics["scope_size"] == 2


def test_japanese_query_finds_the_japanese_adr(folder: Path, tmp_path: Path) -> None:
    index = index_for(folder, tmp_path / "store")
    sync(index, folder)
    result = index.search("ドメインイベントをサービス間で配信する仕組み")
    assert result.candidates[0].adr.path == "0004-イベント駆動.md"


@pytest.mark.parametrize(
    ("adrs_present", "query", "reason"),
    [
        (True, "  \n ", "empty_input"),
        (True, "!!! ---", "empty_input"),
        (False, "Kafka events", "empty_index"),
    ],
)
def test_empty_reasons_of_the_index(
    folder: Path, tmp_path: Path, adrs_present: bool, query: str, reason: str
) -> None:
    index = index_for(folder, tmp_path / "store")
    if adrs_present:
        sync(index, folder)
    else:
        index.sync([])
    result = index.search(query)
    assert result.candidates == () and result.empty_reason == reason


def test_an_empty_pool_has_no_candidates(folder: Path, tmp_path: Path) -> None:
    index = index_for(folder, tmp_path / "store")
    sync(index, folder)
    assert index.search("Kafka", pool=frozenset()).empty_reason == "no_candidates"


def test_progress_is_reported_per_batch(folder: Path, tmp_path: Path) -> None:
    index = index_for(folder, tmp_path / "store")
    seen: list[tuple[int, int]] = []
    adrs, _ = load_adr_folder(folder)
    index.sync(adrs, progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, 4) and seen[-1] == (4, 4)


def test_pipeline_helpers_open_sync_and_report_parse_errors(folder: Path, tmp_path: Path) -> None:
    (folder / "0009-empty.md").write_text("   \n")
    index = open_index_for(folder, tmp_path / "store")
    synced = ensure_synced(index, folder)
    assert len(synced.adrs) == 4
    assert [e.path for e in synced.parse_errors] == ["0009-empty.md"]
    assert any(e.startswith("0009-empty.md") for e in synced.report.errors)
    # a dedicated store (the App / Action cache): fixed collection name, same behaviour
    own = open_index(tmp_path / "own")
    assert own.sync(synced.adrs).added == 4
    assert own.search("Record architecture decisions").candidates[0].adr.path == "0001-record-decisions.md"


def test_an_embedding_failure_mid_sync_is_repaired_by_the_next_sync(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import adr_review.adapters.index_write as index_module
    from adr_review.adapters.embeddings import EmbeddingError, embed_texts

    monkeypatch.setattr(index_module, "BATCH", 1)  # one chunk per embedding call
    calls = {"n": 0}

    def flaky(ef, texts):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 4:
            raise EmbeddingError("model server went away")
        return embed_texts(ef, texts)

    monkeypatch.setattr(index_module, "embed_texts", flaky)
    small = ChunkParams(target=200, maximum=300)  # every ADR is 2+ chunks: the failure lands mid-document
    store = tmp_path / "store"
    first = sync(index_for(folder, store, chunking=small), folder)
    assert first.added < 4 and any("not embedded" in e for e in first.errors)

    calls["n"] = -1000  # healthy again
    second = sync(index_for(folder, store, chunking=small), folder)
    assert not second.errors and not second.rebuilt
    assert first.added + second.added + second.updated == 4  # the half-written ADR is redone
    assert second.updated == 1
    third = sync(index_for(folder, store, chunking=small), folder)
    assert third.unchanged == 4
