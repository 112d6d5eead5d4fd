"""Folder loading with the parse cache, and the knobs that reach the index."""

from __future__ import annotations

from pathlib import Path

import pytest

from adr_review.adapters import adr_files, parse_pool
from adr_review.adapters.adr_files import load_adr_folder, load_adr_folder_cached
from adr_review.adapters.index_open import fusion_params, open_index_for, qualify_cosine_for
from adr_review.config import RetrievalConfig


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "adr"
    (d / "sub").mkdir(parents=True)
    (d / "0001-a.md").write_text("# 1. Use Kafka\n\n## Context\n\nEvents.\n")
    (d / "0002-b.md").write_text("# 2. Use PostgreSQL\n\n## Context\n\nOrders.\n")
    (d / "sub" / "0002-c.md").write_text("# 2. Duplicate number\n\n## Context\n\nSame id as 0002-b.\n")
    (d / "0003-empty.md").write_text("")
    return d


def test_cached_load_equals_a_fresh_parse_and_parses_only_changed_files(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "store" / "parsed.json"
    expected = load_adr_folder(folder)
    first = load_adr_folder_cached(folder, cache)
    assert first[0] == expected[0]
    assert [(e.path, e.reason) for e in first[1]] == [(e.path, e.reason) for e in expected[1]]
    assert cache.is_file()

    parsed: list[str] = []
    real = parse_pool.parse_adr

    def counting(rel: str, data: bytes, **kw: object):
        parsed.append(rel)
        return real(rel, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(parse_pool, "parse_adr", counting)  # where the folder loaders parse
    again = load_adr_folder_cached(folder, cache)
    assert parsed == [] and again[0] == expected[0]  # duplicate ids are still de-duplicated
    assert [e.path for e in again[1]] == ["0003-empty.md"]

    (folder / "0001-a.md").write_text("# 1. Use Kafka 3\n\n## Context\n\nEvents, upgraded.\n")
    changed = load_adr_folder_cached(folder, cache)
    assert parsed == ["0001-a.md"]
    assert {a.path: a.title for a in changed[0]}["0001-a.md"] == "Use Kafka 3"


def test_a_corrupt_cache_is_ignored(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "parsed.json"
    cache.write_text("{not json")
    assert load_adr_folder_cached(folder, cache)[0] == load_adr_folder(folder)[0]


def test_configured_knobs_reach_the_index(folder: Path, tmp_path: Path) -> None:
    cfg = RetrievalConfig(
        dense_weight=0.1, title_weight=0.3, qualify_bm25_rel=0.6, mmr_lambda=0.8, chunk_target=900
    )
    index = open_index_for(folder, tmp_path / "store", config=cfg)
    assert index.fusion.dense_weight == 0.1 and index.fusion.title_weight == 0.3
    assert index.fusion.qualify_bm25_rel == 0.6 and index.fusion.mmr_lambda == 0.8
    assert index.chunking.target == 900


@pytest.mark.parametrize(
    ("embedding", "configured", "expected"),
    [
        ("offline-hash", None, 0.25),
        ("offline-hash", 0.6, 0.6),
        ("default", None, 0.5),
        ("sentence-transformers:x", None, 0.5),
    ],
)
def test_the_cosine_gate_follows_the_embedding_unless_configured(
    embedding: str, configured: float | None, expected: float
) -> None:
    assert qualify_cosine_for(embedding, configured) == expected
    assert fusion_params(RetrievalConfig(qualify_cosine=configured), embedding).qualify_cosine == expected


def test_a_no_op_refresh_reads_no_adr_file_and_no_parse_until_the_adrs_are_needed(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import time

    from adr_review.adapters.index_open import ensure_synced

    past = time.time_ns() - 3600 * 10**9  # modified an hour before the cache was written
    for p in folder.rglob("*.md"):
        os.utime(p, ns=(past, past))
    store = tmp_path / "store"
    first = ensure_synced(open_index_for(folder, store), folder)
    read: list[str] = []
    real = Path.read_bytes

    def counting(self: Path) -> bytes:
        if self.suffix == ".md" or (self.name.startswith("parsed-") and self.name.count(".") == 2):
            read.append(self.name)  # an ADR, or the cached parses (parsed-<collection>.<token>.json)
        return real(self)

    real_bounded = adr_files.read_bounded

    def counting_adr(path: Path, rel: str, max_bytes: int = adr_files.MAX_BYTES) -> bytes:
        read.append(path.name)  # how the folder loader reads an ADR file
        return real_bounded(path, rel, max_bytes)

    monkeypatch.setattr(Path, "read_bytes", counting)
    monkeypatch.setattr(adr_files, "read_bounded", counting_adr)
    index = open_index_for(folder, store)
    again = ensure_synced(index, folder)
    assert again.report.unchanged == 3 and not (again.report.added or again.report.updated)
    assert [e.path for e in again.parse_errors] == ["0003-empty.md"]
    assert any(err.startswith("0003-empty.md") for err in again.report.errors)
    assert read == []  # `adr-review index` stops here
    assert again.adrs == first.adrs  # read from the cached parses on first use, once
    assert index.search("Kafka events").candidates[0].adr.path == "0001-a.md"
    assert len(read) == 1 and not any(name.endswith(".md") for name in read)
