"""The store's one ordered list of named migrations (the model: simonw/llm's migrations.py).

Each function is registered in order with @migration, applied once in its own transaction, and its
name recorded in `_migrations` (app/adr_review/adapters/state_migrations.py, the runner both engines share). Never edit an applied migration: add a new one at the end. The DDL is
spelled out literally (not built from RUN_STATES) so a migration means the same thing forever.

The first migrations adopt files written before this list existed: the checkpoint store's tables
(PRAGMA user_version = 1) and the queue's (versioned in a `queue_schema` table) are created only if
missing, so an old file keeps its rows and simply gets its names recorded.
"""

from __future__ import annotations

import sqlite3

from adr_review.adapters import feedback_sql
from adr_review.adapters.state_migrations import MigrationList
from adr_review.adapters.state_migrations import run as _run

MIGRATIONS = MigrationList()
migration = MIGRATIONS.add


@migration
def m001_runs_checkpoints_attempts(cur: sqlite3.Cursor) -> None:
    _run(
        cur,
        """CREATE TABLE IF NOT EXISTS runs (
            run_key          TEXT PRIMARY KEY,
            state            TEXT NOT NULL DEFAULT 'queued'
                             CHECK (state IN ('queued','running','completed','failed','cancelled','stalled')),
            meta             TEXT NOT NULL DEFAULT '{}',
            error            TEXT,
            lease_owner      TEXT,
            lease_expires_at REAL,
            created_at       REAL NOT NULL,
            updated_at       REAL NOT NULL,
            finished_at      REAL
        )""",
        "CREATE INDEX IF NOT EXISTS runs_by_state ON runs (state, updated_at)",
        """CREATE TABLE IF NOT EXISTS checkpoints (
            run_key     TEXT NOT NULL REFERENCES runs (run_key),
            stage       TEXT NOT NULL,
            seq         INTEGER NOT NULL,
            payload     TEXT NOT NULL,
            created_at  REAL NOT NULL,
            PRIMARY KEY (run_key, stage)
        )""",
        """CREATE TABLE IF NOT EXISTS attempts (
            id                 INTEGER PRIMARY KEY AUTOINCREMENT,
            run_key            TEXT NOT NULL REFERENCES runs (run_key),
            stage              TEXT NOT NULL,
            attempt            INTEGER NOT NULL,
            outcome            TEXT NOT NULL
                               CHECK (outcome IN ('executed','skipped-checkpoint','skipped-locked','failed')),
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
        )""",
        "CREATE INDEX IF NOT EXISTS attempts_by_run ON attempts (run_key, id)",
        # at most one authoritative attempt per stage: the one whose result is the checkpoint
        """CREATE UNIQUE INDEX IF NOT EXISTS attempts_one_authoritative
            ON attempts (run_key, stage) WHERE authoritative = 1""",
    )


@migration
def m002_deliveries_and_queue(cur: sqlite3.Cursor) -> None:
    _run(
        cur,
        """CREATE TABLE IF NOT EXISTS deliveries (
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
        )""",
        "CREATE INDEX IF NOT EXISTS deliveries_by_guid ON deliveries (delivery_id)",
        """CREATE TABLE IF NOT EXISTS queue (
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
        )""",
        "CREATE INDEX IF NOT EXISTS queue_by_subject ON queue (repo, pr_number, adr_path)",
        "CREATE INDEX IF NOT EXISTS queue_by_due ON queue (not_before, enqueued_at)",
        """CREATE TABLE IF NOT EXISTS queue_health (
            id INTEGER PRIMARY KEY CHECK (id = 1), checked_at REAL NOT NULL
        )""",
        "DROP TABLE IF EXISTS queue_schema",  # the queue's own version counter, replaced by this list
    )


@migration
def m003_user_version_for_older_builds(cur: sqlite3.Cursor) -> None:
    """Builds before this list read PRAGMA user_version (theirs was 1): 2 makes them refuse the file
    with their "newer than this program" error instead of failing on a half-known layout."""
    cur.execute("PRAGMA user_version = 2")


@migration
def m004_stage_results(cur: sqlite3.Cursor) -> None:
    """Model answers by the hash of what they read (content-addressed): a push that changes nothing a
    stage reads finds its answer here, whatever the run, and pays nothing."""
    _run(
        cur,
        """CREATE TABLE IF NOT EXISTS stage_results (
            result_key  TEXT PRIMARY KEY,
            stage       TEXT NOT NULL,
            payload     TEXT NOT NULL,
            created_at  REAL NOT NULL
        )""",
    )


@migration
def m005_spend(cur: sqlite3.Cursor) -> None:
    """What the model calls cost, per scope (a repository) and period (a UTC calendar month): the
    monthly spend cap reads it. Only executed calls add to it; reused stages cost nothing."""
    _run(
        cur,
        """CREATE TABLE IF NOT EXISTS spend (
            scope       TEXT NOT NULL,
            period      TEXT NOT NULL,
            usd         REAL NOT NULL DEFAULT 0,
            calls       INTEGER NOT NULL DEFAULT 0,
            updated_at  REAL NOT NULL,
            PRIMARY KEY (scope, period)
        )""",
    )


@migration
def m006_locks_and_push_order(cur: sqlite3.Cursor) -> None:
    """Named locks (the comment write of one ADR, the sync of one index), the order in which each PR
    head's push arrived (a newer head is never superseded by an older one), and no more health row:
    /healthz reads only."""
    _run(
        cur,
        """CREATE TABLE IF NOT EXISTS locks (
            name        TEXT PRIMARY KEY,
            owner       TEXT NOT NULL,
            expires_at  REAL NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS pr_heads (
            repo        TEXT NOT NULL,
            pr_number   INTEGER NOT NULL,
            head_sha    TEXT NOT NULL,
            push_order  INTEGER NOT NULL,
            seen_at     REAL NOT NULL,
            PRIMARY KEY (repo, pr_number, head_sha)
        )""",
        "DROP TABLE IF EXISTS queue_health",
    )


@migration
def m007_feedback(cur: sqlite3.Cursor) -> None:
    """What reviewers did with the findings (issue 17): one row per reviewed ADR of a PR, one per
    finding shown (adopted, dismissed, by whom): app/adr_review/adapters/feedback_sql.py."""
    _run(cur, *feedback_sql.tables("REAL"))
