"""What only the SQLite engine has: a WAL file, the migration list, and files written by older versions
(the checkpoint store's PRAGMA user_version = 1 tables and the queue's `queue_schema` tables), which
must open and keep their rows. The shared contract is in test_state_store.py."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from adr_review.adapters.state_sqlite import SqliteStateStore, StoreError
from adr_review.adapters.state_sqlite.migrations import MIGRATIONS
from adr_review.pipeline.ports import InfrastructureError
from adr_review.pipeline.queue import RunSpec
from adr_review.pipeline.state_ports import AttemptInfo

NAMES = [fn.__name__ for fn in MIGRATIONS]

# The DDL of the stores this one replaces, copied verbatim (states and outcomes spelled out).
LEGACY_CHECKPOINT_DDL = """
CREATE TABLE runs (
    run_key          TEXT PRIMARY KEY,
    state            TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued','running','completed','failed','cancelled','stalled')),
    meta             TEXT NOT NULL DEFAULT '{}',
    error            TEXT,
    lease_owner      TEXT,
    lease_expires_at REAL,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL,
    finished_at      REAL
);
CREATE INDEX runs_by_state ON runs (state, updated_at);

CREATE TABLE checkpoints (
    run_key     TEXT NOT NULL REFERENCES runs (run_key),
    stage       TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    payload     TEXT NOT NULL,
    created_at  REAL NOT NULL,
    PRIMARY KEY (run_key, stage)
);

CREATE TABLE attempts (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key            TEXT NOT NULL REFERENCES runs (run_key),
    stage              TEXT NOT NULL,
    attempt            INTEGER NOT NULL,
    outcome            TEXT NOT NULL CHECK (outcome IN ('executed','skipped-checkpoint','skipped-locked','failed')),
    authoritative      INTEGER NOT NULL DEFAULT 0,
    duration_s         REAL NOT NULL DEFAULT 0,
    model              TEXT NOT NULL DEFAULT '',
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0,
    llm_calls          INTEGER NOT NULL DEFAULT 0,
    error              TEXT,
    owner              TEXT,
    created_at         REAL NOT NULL,
    UNIQUE (run_key, stage, attempt)
);
CREATE INDEX attempts_by_run ON attempts (run_key, id);
CREATE UNIQUE INDEX attempts_one_authoritative ON attempts (run_key, stage) WHERE authoritative = 1;
PRAGMA user_version = 1;
"""

LEGACY_QUEUE_DDL = """
CREATE TABLE queue_schema (version INTEGER NOT NULL);
INSERT INTO queue_schema (version) VALUES (1);
CREATE TABLE deliveries (
    hook_id         TEXT NOT NULL,
    delivery_id     TEXT NOT NULL,
    event           TEXT NOT NULL,
    action          TEXT,
    installation_id INTEGER,
    repo            TEXT,
    received_at     REAL NOT NULL,
    body_sha256     TEXT NOT NULL,
    payload         TEXT NOT NULL,
    run_keys        TEXT NOT NULL DEFAULT '[]',
    duplicates      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (hook_id, delivery_id)
);
CREATE INDEX deliveries_by_guid ON deliveries (delivery_id);
CREATE TABLE queue (
    run_key             TEXT PRIMARY KEY REFERENCES runs (run_key),
    kind                TEXT NOT NULL CHECK (kind IN ('plan', 'review')),
    installation_id     INTEGER,
    repo                TEXT NOT NULL,
    pr_number           INTEGER NOT NULL,
    adr_path            TEXT NOT NULL DEFAULT '',
    head_sha            TEXT NOT NULL DEFAULT '',
    spec                TEXT NOT NULL DEFAULT '{}',
    parent_key          TEXT,
    hook_id             TEXT,
    delivery_id         TEXT,
    enqueued_at         REAL NOT NULL,
    not_before          REAL NOT NULL,
    attempts            INTEGER NOT NULL DEFAULT 0,
    max_attempts        INTEGER NOT NULL DEFAULT 3,
    progress_at         REAL,
    last_error          TEXT,
    stalled_by_watchdog INTEGER NOT NULL DEFAULT 0,
    cancel_reason       TEXT
);
CREATE INDEX queue_by_subject ON queue (repo, pr_number, adr_path);
CREATE INDEX queue_by_due ON queue (not_before, enqueued_at);
CREATE TABLE queue_health (id INTEGER PRIMARY KEY CHECK (id = 1), checked_at REAL NOT NULL);
"""

LEGACY_ROWS = """
INSERT INTO runs (run_key, state, meta, created_at, updated_at) VALUES
    ('plan:o/r#7', 'completed', '{"kind":"plan"}', 1.0, 2.0),
    ('rk1-old', 'queued', '{"kind":"review"}', 1.0, 2.0);
INSERT INTO checkpoints (run_key, stage, seq, payload, created_at) VALUES
    ('plan:o/r#7', 'plan', 1, '{"decision":"review"}', 2.0);
INSERT INTO attempts (run_key, stage, attempt, outcome, authoritative, owner, created_at) VALUES
    ('plan:o/r#7', 'plan', 1, 'executed', 1, 'old-worker', 2.0);
"""

LEGACY_QUEUE_ROWS = """
INSERT INTO deliveries (hook_id, delivery_id, event, received_at, body_sha256, payload, run_keys) VALUES
    ('99', 'guid-1', 'pull_request', 1.0, 'x', '{"action":"opened"}', '["plan:o/r#7"]');
INSERT INTO queue (run_key, kind, repo, pr_number, adr_path, head_sha, enqueued_at, not_before, attempts) VALUES
    ('plan:o/r#7', 'plan', 'o/r', 7, '', 'aaaa', 1.0, 1.0, 1),
    ('rk1-old', 'review', 'o/r', 7, 'docs/adr/1.md', 'aaaa', 1.5, 1.5, 0);
"""


def legacy_file(path: Path, *scripts: str) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript("".join(scripts))
    conn.commit()
    conn.close()
    return path


def applied(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]
    finally:
        conn.close()


def tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def test_a_new_file_is_wal_migrated_in_order_and_durable(tmp_path: Path) -> None:
    path = tmp_path / "a" / "state.sqlite3"
    with SqliteStateStore(path) as store:
        store.put("rk", "recall", None, {"x": "決定"}, AttemptInfo(0.2))
    assert applied(path) == NAMES
    assert NAMES[:3] == [
        "m001_runs_checkpoints_attempts",
        "m002_deliveries_and_queue",
        "m003_user_version_for_older_builds",
    ]
    assert "m006_locks_and_push_order" in NAMES
    expected = {"runs", "checkpoints", "attempts", "deliveries", "queue", "locks", "pr_heads", "_migrations"}
    assert expected <= tables(path)
    assert "queue_health" not in tables(path)  # /healthz reads only: its write row is gone
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2  # older builds refuse it as "newer"
    conn.close()
    with SqliteStateStore(path) as again:
        assert again.get("rk", "recall") == {"x": "決定"}
    assert applied(path) == NAMES  # each migration applied once


def test_a_file_migrated_by_a_newer_program_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    SqliteStateStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO _migrations (name, applied_at) VALUES ('m999_from_the_future', 0)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer program.*m999_from_the_future"):
        SqliteStateStore(path)


def test_a_file_that_is_not_a_database_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(StoreError, match=str(path)):
        SqliteStateStore(path)


def test_a_legacy_app_file_opens_and_keeps_its_rows(tmp_path: Path) -> None:
    path = legacy_file(
        tmp_path / "app.sqlite3", LEGACY_CHECKPOINT_DDL, LEGACY_QUEUE_DDL, LEGACY_ROWS, LEGACY_QUEUE_ROWS
    )
    with SqliteStateStore(path, clock=lambda: 10.0) as store:
        assert store.get("plan:o/r#7", "plan") == {"decision": "review"}
        [attempt] = store.attempts("plan:o/r#7")
        assert (attempt.outcome, attempt.authoritative, attempt.owner) == ("executed", True, "old-worker")
        assert store.stored_guids(["guid-1", "guid-2"]) == {"guid-1"}
        assert store.delivery_payload("99", "guid-1") == '{"action":"opened"}'
        assert [(i.run_key, i.state, i.attempts) for i in store.items()] == [
            ("plan:o/r#7", "completed", 1),
            ("rk1-old", "queued", 0),
        ]
        claimed = store.claim("rk1-old", "new-worker", 60)  # the queue goes on where it was
        assert claimed is not None and claimed.attempts == 1
        store.enqueue([RunSpec("rk1-new", "review", "o/r", 7, adr_path="docs/adr/2.md")])
        assert store.health()["queue_depth"] == 1
    assert applied(tmp_path / "app.sqlite3") == NAMES
    assert "queue_schema" not in tables(path)


def test_a_legacy_action_cache_file_gets_the_queue_tables(tmp_path: Path) -> None:
    """The Action's cache held the checkpoint store's tables only."""
    path = legacy_file(tmp_path / "checkpoints.sqlite3", LEGACY_CHECKPOINT_DDL, LEGACY_ROWS)
    with SqliteStateStore(path) as store:
        assert store.get("plan:o/r#7", "plan") == {"decision": "review"}
        assert store.get_run("rk1-old").state == "queued"  # type: ignore[union-attr]
        assert store.enqueue([RunSpec("r", "plan", "o/r", 1)]) == 1
    assert applied(path) == NAMES


def test_memory_stores_are_separate_databases() -> None:
    with SqliteStateStore(":memory:") as a, SqliteStateStore(":memory:") as b:
        a.put("rk", "recall", None, {"x": 1}, AttemptInfo())
        assert b.get("rk", "recall") is None and a.get("rk", "recall") == {"x": 1}


def test_the_store_and_its_wal_files_are_private(tmp_path: Path) -> None:
    """The file holds raw webhook payloads: 0600 (and its -wal / -shm siblings), in a 0700 folder."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = tmp_path / "new" / "app.sqlite3"
        with SqliteStateStore(path) as store:
            store.enqueue([RunSpec("r1", "review", "o/r", 7)])
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in path.parent.iterdir()}
        assert modes == {"app.sqlite3": 0o600, "app.sqlite3-wal": 0o600, "app.sqlite3-shm": 0o600}
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        loose = tmp_path / "loose.sqlite3"
        SqliteStateStore(loose).close()
        loose.chmod(0o644)  # written by an older version
        SqliteStateStore(loose).close()
        assert stat.S_IMODE(loose.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_health_only_reads(tmp_path: Path) -> None:
    """/healthz is unauthenticated: it must not write (it used to run a write transaction per request).
    It answers at once while another process holds the write lock, and changes nothing in the file."""
    path = tmp_path / "app.sqlite3"
    with SqliteStateStore(path, busy_timeout_s=5) as store:
        store.enqueue([RunSpec("r1", "review", "o/r", 7)])
        writer = sqlite3.connect(path, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # another process in a long write transaction
        try:
            before = path.with_name("app.sqlite3-wal").stat().st_size
            started = time.monotonic()
            assert store.health()["store_ok"] and store.health()["queue_depth"] == 1
            assert time.monotonic() - started < 1.0
            assert path.with_name("app.sqlite3-wal").stat().st_size == before
        finally:
            writer.execute("ROLLBACK")
            writer.close()


def test_a_store_that_stays_locked_is_an_infrastructure_error_not_a_driver_error(tmp_path: Path) -> None:
    """Another process holding the write lock past the busy timeout is an outage of the store: the
    run fails and is retried (InfrastructureError), a stage never turns it into a degraded result."""
    path = tmp_path / "app.sqlite3"
    store = SqliteStateStore(path, busy_timeout_s=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(InfrastructureError, match="database is locked") as raised:
            store.ensure_run("rk-locked", {})
        assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
        holder.execute("ROLLBACK")
        store.ensure_run("rk-locked", {})  # back: the same store works again
    finally:
        holder.close()
        store.close()
