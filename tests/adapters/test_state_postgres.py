"""What only the PostgreSQL engine has: its migration list (applied once, in order, by any number of
processes opening a fresh database at once), refusing a database a newer program migrated, a clear
error for a server it cannot reach, and claims that skip a row another transaction holds. The shared
contract (the same tests as SQLite) is in test_state_store.py."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from adr_review.adapters.state_postgres import PostgresStateStore, StoreError
from adr_review.adapters.state_postgres.migrations import MIGRATIONS
from adr_review.pipeline.queue import RunSpec

NAMES = [fn.__name__ for fn in MIGRATIONS]


@pytest.fixture
def url(postgres: Any) -> str:
    return str(postgres.new_url())


def applied(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY applied_at, name")]


def test_a_new_database_is_migrated_in_order_once(url: str) -> None:
    with PostgresStateStore(url) as store:
        store.enqueue([RunSpec("r1", "review", "o/r", 7)])
    assert sorted(applied(url)) == sorted(NAMES) and NAMES[0] == "m001_runs_checkpoints_attempts"
    with PostgresStateStore(url) as again:
        assert again.item("r1") is not None
    assert sorted(applied(url)) == sorted(NAMES)  # each applied once


def test_processes_opening_one_fresh_database_at_once_migrate_it_once(url: str) -> None:
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def open_it() -> None:
        barrier.wait()
        try:
            PostgresStateStore(url, pool_size=1).close()
        except BaseException as exc:  # pragma: no cover - what this test looks for
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and sorted(applied(url)) == sorted(NAMES)


def test_a_database_migrated_by_a_newer_program_is_refused(url: str) -> None:
    PostgresStateStore(url).close()
    with psycopg.connect(url) as conn:
        conn.execute("INSERT INTO _migrations (name, applied_at) VALUES ('m999_from_the_future', 0)")
    with pytest.raises(StoreError, match="newer program.*m999_from_the_future"):
        PostgresStateStore(url)


def test_a_server_it_cannot_reach_is_a_store_error_without_the_password() -> None:
    with socket_free_port() as port:
        url = f"postgresql://adr:s3cret@127.0.0.1:{port}/db"
        started = time.monotonic()
        with pytest.raises(StoreError) as err:
            PostgresStateStore(url, connect_timeout_s=1.0)
    assert "postgresql://adr:***@127.0.0.1" in str(err.value) and "s3cret" not in str(err.value)
    assert time.monotonic() - started < 10


def test_a_claim_skips_a_run_whose_row_another_transaction_holds(url: str) -> None:
    """FOR UPDATE SKIP LOCKED: a claimer does not queue behind another worker's claim."""
    store = PostgresStateStore(url)
    try:
        store.enqueue([RunSpec("r1", "review", "o/r", 7)])
        with psycopg.connect(url) as other:
            other.execute("SELECT 1 FROM runs WHERE run_key = 'r1' FOR UPDATE")  # its claim, in flight
            started = time.monotonic()
            assert store.claim("r1", "A", 60) is None
            assert time.monotonic() - started < 1.0  # skipped, not waited for
        claimed = store.claim("r1", "A", 60)  # the other transaction is over
        assert claimed is not None and claimed.lease_owner == "A"
    finally:
        store.close()


class socket_free_port:  # noqa: N801  (a context manager: a port nothing listens on)
    def __enter__(self) -> int:
        import socket

        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        return int(self._sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self._sock.close()
