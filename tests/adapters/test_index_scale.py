"""The index past SQLite's 32,766 variables per statement: built, re-indexed and searched with more
chunks than one statement can name. A tiny chunk size (one line per chunk) and a 16-dimension offline
embedding make that cheap; before the mirror, every later sync and search failed here with
"too many SQL variables"."""

from __future__ import annotations

from pathlib import Path

import pytest

from adr_review.adapters import index as index_module
from adr_review.adapters.adr_files import load_adr_folder
from adr_review.adapters.embeddings import OfflineHashEmbedding
from adr_review.adapters.index import ChromaAdrIndex
from adr_review.adapters.index_mirror import IndexMirror
from adr_review.core.chunking import ChunkParams

SQLITE_MAX_VARIABLES = 32_766
ONE_LINE = ChunkParams(target=24, maximum=24)  # every "fact DD LLLL kafkaK" line is its own chunk
N_ADRS, LINES = 40, 830  # 40 x (830 lines + a title chunk or two) > 32,766 chunks


def write_adr(folder: Path, d: int, extra: str = "") -> None:
    lines = [f"# {d + 1}. Decision number {d}", "", "## Context", ""]
    lines += [f"fact {d:02d} {i:04d} kafka{i % 7}" for i in range(LINES)]
    (folder / f"{d + 1:04d}-decision.md").write_text("\n".join(lines) + extra + "\n", encoding="utf-8")


@pytest.fixture
def small_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "embedding_for", lambda name: OfflineHashEmbedding(dim=16))


def test_an_index_past_32766_chunks_reindexes_and_recalls(tmp_path: Path, small_vectors: None) -> None:
    folder = tmp_path / "adr"
    folder.mkdir()
    for d in range(N_ADRS):
        write_adr(folder, d)
    adrs, errors = load_adr_folder(folder)
    assert not errors and len(adrs) == N_ADRS
    store = tmp_path / "store"

    built = ChromaAdrIndex(store, "big", chunking=ONE_LINE)
    assert built.sync(adrs).added == N_ADRS
    assert built._collection.count() > SQLITE_MAX_VARIABLES

    # A new process: the no-op sync, then recall (lexical and dense).
    index = ChromaAdrIndex(store, "big", chunking=ONE_LINE)
    assert index.sync(adrs).unchanged == N_ADRS
    top = index.search("fact 07 0123 kafka4", top_n=3).candidates[0]
    assert top.adr.path == "0008-decision.md" and top.dense is not None and top.dense > 0.5

    # Change one ADR, delete one, add one: the stale chunks go by id, in batches.
    write_adr(folder, 3, extra="\nfact amended")
    (folder / "0005-decision.md").unlink()
    write_adr(folder, N_ADRS)
    adrs, _ = load_adr_folder(folder)
    report = index.sync(adrs)
    assert (report.added, report.updated, report.removed, report.unchanged) == (1, 1, 1, N_ADRS - 2)
    assert not report.errors
    paths = {m["path"] for m in _all_metadatas(index)}
    assert "0005-decision.md" not in paths and f"{N_ADRS + 1:04d}-decision.md" in paths

    # Without the mirror the index reads the collection itself, in pages, and finds it complete.
    IndexMirror.drop(store, "big")
    reread = ChromaAdrIndex(store, "big", chunking=ONE_LINE)
    assert reread.sync(adrs).unchanged == N_ADRS
    query = f"fact {N_ADRS:02d} 0042 kafka0"
    expected = index.search(query, top_n=5)
    got = reread.search(query, top_n=5)
    assert got.candidates[0].adr.path == f"{N_ADRS + 1:04d}-decision.md"
    assert [c.adr.path for c in got.candidates] == [c.adr.path for c in expected.candidates]
    # vectors read back from Chroma are its float32 copies: the same cosines to float32 precision
    assert [c.dense for c in got.candidates] == pytest.approx(
        [c.dense for c in expected.candidates], abs=1e-6
    )


def _all_metadatas(index: ChromaAdrIndex) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    while True:
        page = index._collection.get(include=["metadatas"], limit=5000, offset=len(out))
        if not page["ids"]:
            return out
        out.extend(page["metadatas"])
