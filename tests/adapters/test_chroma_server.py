"""The index on a Chroma server (`chromadb.HttpClient`, what several App hosts share), against a real
`chroma run` process: one collection per (repository, ADR folder), named by its index slot; what one
process synced another finds without embedding again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import chromadb
import pytest

from app.adapters import chroma_store
from app.adapters.adr_files import load_adr_folder
from app.adapters.index_open import open_index
from app.pipeline.keys import index_slot

pytestmark = pytest.mark.real_process  # a `chroma run` server process

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(chroma_server: str) -> Iterator[str]:
    chroma_store.use_chroma_server(chroma_server)
    yield chroma_server
    chroma_store.use_chroma_server(None)


def test_indexes_live_on_the_server_one_collection_per_repo_folder(server: str, tmp_path: Path) -> None:
    adrs, errors = load_adr_folder(ROOT / "examples" / "adr")
    assert adrs and not errors
    slot = index_slot("acme/shop", "docs/adr")
    first = open_index(tmp_path / "host-a", collection=slot)
    report = first.sync(adrs)
    assert report.added == len(adrs)
    hits = first.search("Kafka for order events", top_n=3)
    assert hits.candidates and not hits.diagnostics.get("embedding_failed")
    # Another host: its own folder, the same server; the collection is there, nothing is re-embedded.
    second = open_index(tmp_path / "host-b", collection=slot)
    again = second.sync(adrs)
    assert (again.added, again.updated, again.unchanged) == (0, 0, len(adrs))
    assert [c.adr.path for c in second.search("Kafka for order events", top_n=3).candidates] == [
        c.adr.path for c in hits.candidates
    ]
    other = open_index(tmp_path / "host-a", collection=index_slot("acme/other", "docs/adr"))
    assert other.sync(adrs[:2]).added == 2
    host, port = server.removeprefix("http://").split(":")
    names = {c.name for c in chromadb.HttpClient(host=host, port=int(port)).list_collections()}
    assert {slot, index_slot("acme/other", "docs/adr")} <= names
    assert not (tmp_path / "host-a" / "chroma").exists()  # nothing on the host's disk


def test_an_unreachable_server_is_an_index_store_error(tmp_path: Path) -> None:
    from app.pipeline.ports import IndexStoreError

    chroma_store.use_chroma_server("http://127.0.0.1:9")  # discard port: nothing listens
    try:
        with pytest.raises(IndexStoreError, match="Chroma server http://127.0.0.1:9"):
            open_index(tmp_path, collection="ix-x")
    finally:
        chroma_store.use_chroma_server(None)
