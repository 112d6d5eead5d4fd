"""The index on a Chroma server (`chromadb.HttpClient`, what several App hosts share), against a real
`chroma run` process: one collection per (repository, ADR folder), named by its index slot; what one
process synced another finds without embedding again."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import chromadb
import pytest

from adr_review.adapters import chroma_store
from adr_review.adapters.adr_files import load_adr_folder
from adr_review.adapters.index_open import open_index
from adr_review.pipeline.keys import index_slot
from adr_review.pipeline.ports import InfrastructureError
from tests.chroma_server import start_chroma, stop_chroma

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


QUICK = chroma_store.ChromaTimeouts(connect_s=1.0, read_s=2.0, retries=1, backoff_s=0.2)


def test_an_unreachable_server_is_an_infrastructure_error(tmp_path: Path) -> None:
    """Not an unusable index store (which degrades recall): an outage, which fails the run for a retry."""
    chroma_store.use_chroma_server("http://127.0.0.1:9", timeouts=QUICK)  # discard port: nothing listens
    try:
        with pytest.raises(InfrastructureError, match="Chroma server http://127.0.0.1:9"):
            open_index(tmp_path, collection="ix-x")
    finally:
        chroma_store.use_chroma_server(None)


def test_a_hung_server_times_out_every_call_and_serves_again_once_it_is_back(tmp_path: Path) -> None:
    """chromadb's own client waits forever on a stopped server (no timeout at all); ours ends each call
    within its deadline as an InfrastructureError, for making a client and for a request alike."""
    proc, url, root = start_chroma()
    chroma_store.use_chroma_server(url, timeouts=QUICK)
    adrs, _ = load_adr_folder(ROOT / "examples" / "adr")
    try:
        index = open_index(tmp_path / "a", collection="ix-hung")
        index.sync(adrs[:2])
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            failures = {}
            for name, call in (
                ("request", lambda: index.sync(adrs)),
                ("client", lambda: chroma_store.chroma_client(tmp_path)),
            ):
                worker = threading.Thread(target=lambda c=call, n=name: failures.update({n: _raised(c)}))
                worker.start()
                worker.join(60)  # a hang detector far above the bound (2 x 3 s + 0.2 s)
                assert not worker.is_alive(), f"{name}: still waiting on the stopped server"
            assert all(isinstance(e, InfrastructureError) for e in failures.values()), failures
            assert "Chroma server" in str(failures["request"])
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        assert index.sync(adrs).added == len(adrs) - 2  # the same client, usable again
    finally:
        chroma_store.use_chroma_server(None)
        stop_chroma(proc, root)


def _raised(call: Callable[[], object]) -> BaseException | None:
    try:
        call()
    except BaseException as exc:
        return exc
    return None
