"""The PostgreSQL store's one ordered list of named migrations (the SQLite store's style: each function
registered in order with @migration, applied once in its own transaction by the shared runner
(app/adr_review/adapters/state_migrations.py), its name recorded in `_migrations`; never edit an applied one, add
a new one at the end).

The tables are the SQLite store's, column for column, so the contract (and every query a test or an
operator writes against it) reads the same on both: times are epoch seconds (`double precision`, the
store's clock), flags are 0/1 integers, JSON is kept as the text that was stored. Migrators in several
processes take one advisory lock per transaction, so they apply each migration once, in order.
"""

from __future__ import annotations

from typing import Any

from adr_review.adapters import feedback_sql
from adr_review.adapters.state_migrations import MigrationList
from adr_review.adapters.state_migrations import run as _run

Cursor = Any  # psycopg.Cursor[dict[str, Any]]
MIGRATIONS = MigrationList()
migration = MIGRATIONS.add
LOCK_ID = 0x616472_7276  # "adrrv": pg_advisory_xact_lock key of the migrators


@migration
def m001_runs_checkpoints_attempts(cur: Cursor) -> None:
    _run(
        cur,
        """CREATE TABLE runs (
            run_key          TEXT PRIMARY KEY,
            state            TEXT NOT NULL DEFAULT 'queued'
                             CHECK (state IN ('queued','running','completed','failed','cancelled','stalled')),
            meta             TEXT NOT NULL DEFAULT '{}',
            error            TEXT,
            lease_owner      TEXT,
            lease_expires_at DOUBLE PRECISION,
            created_at       DOUBLE PRECISION NOT NULL,
            updated_at       DOUBLE PRECISION NOT NULL,
            finished_at      DOUBLE PRECISION
        )""",
        "CREATE INDEX runs_by_state ON runs (state, updated_at)",
        """CREATE TABLE checkpoints (
            run_key     TEXT NOT NULL REFERENCES runs (run_key),
            stage       TEXT NOT NULL,
            seq         INTEGER NOT NULL,
            payload     TEXT NOT NULL,
            created_at  DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (run_key, stage)
        )""",
        """CREATE TABLE attempts (
            id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_key            TEXT NOT NULL REFERENCES runs (run_key),
            stage              TEXT NOT NULL,
            attempt            INTEGER NOT NULL,
            outcome            TEXT NOT NULL
                               CHECK (outcome IN ('executed','skipped-checkpoint','skipped-locked','failed')),
            authoritative      INTEGER NOT NULL DEFAULT 0 CHECK (authoritative IN (0, 1)),
            duration_s         DOUBLE PRECISION NOT NULL DEFAULT 0,
            model              TEXT NOT NULL DEFAULT '',
            input_tokens       BIGINT NOT NULL DEFAULT 0,
            output_tokens      BIGINT NOT NULL DEFAULT 0,
            cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
            cache_write_tokens BIGINT NOT NULL DEFAULT 0,
            cost_usd           DOUBLE PRECISION NOT NULL DEFAULT 0,
            llm_calls          INTEGER NOT NULL DEFAULT 0,
            error              TEXT,
            owner              TEXT,
            created_at         DOUBLE PRECISION NOT NULL,
            UNIQUE (run_key, stage, attempt)
        )""",
        "CREATE INDEX attempts_by_run ON attempts (run_key, id)",
        # at most one authoritative attempt per stage: the one whose result is the checkpoint
        "CREATE UNIQUE INDEX attempts_one_authoritative ON attempts (run_key, stage) WHERE authoritative = 1",
    )


@migration
def m002_deliveries_and_queue(cur: Cursor) -> None:
    _run(
        cur,
        """CREATE TABLE deliveries (
            hook_id         TEXT NOT NULL,
            delivery_id     TEXT NOT NULL,
            event           TEXT NOT NULL,
            action          TEXT,
            installation_id BIGINT,
            repo            TEXT,
            received_at     DOUBLE PRECISION NOT NULL,
            body_sha256     TEXT NOT NULL,
            payload         TEXT NOT NULL,
            run_keys        TEXT NOT NULL DEFAULT '[]',
            duplicates      INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (hook_id, delivery_id)
        )""",
        "CREATE INDEX deliveries_by_guid ON deliveries (delivery_id)",
        """CREATE TABLE queue (
            run_key             TEXT PRIMARY KEY REFERENCES runs (run_key),
            kind                TEXT NOT NULL CHECK (kind IN ('plan', 'review')),
            installation_id     BIGINT,
            repo                TEXT NOT NULL,
            pr_number           INTEGER NOT NULL,
            adr_path            TEXT NOT NULL DEFAULT '',
            head_sha            TEXT NOT NULL DEFAULT '',
            spec                TEXT NOT NULL DEFAULT '{}',
            parent_key          TEXT,
            hook_id             TEXT,
            delivery_id         TEXT,
            enqueued_at         DOUBLE PRECISION NOT NULL,
            not_before          DOUBLE PRECISION NOT NULL,
            attempts            INTEGER NOT NULL DEFAULT 0,
            max_attempts        INTEGER NOT NULL DEFAULT 3,
            progress_at         DOUBLE PRECISION,
            last_error          TEXT,
            stalled_by_watchdog INTEGER NOT NULL DEFAULT 0 CHECK (stalled_by_watchdog IN (0, 1)),
            cancel_reason       TEXT
        )""",
        "CREATE INDEX queue_by_subject ON queue (repo, pr_number, adr_path)",
        "CREATE INDEX queue_by_due ON queue (not_before, enqueued_at)",
    )


@migration
def m003_stage_results(cur: Cursor) -> None:
    """Model answers by the hash of what they read (content-addressed), whatever the run."""
    _run(
        cur,
        """CREATE TABLE stage_results (
            result_key  TEXT PRIMARY KEY,
            stage       TEXT NOT NULL,
            payload     TEXT NOT NULL,
            created_at  DOUBLE PRECISION NOT NULL
        )""",
    )


@migration
def m004_spend(cur: Cursor) -> None:
    """What the model calls cost, per scope (a repository) and period (a UTC calendar month)."""
    _run(
        cur,
        """CREATE TABLE spend (
            scope       TEXT NOT NULL,
            period      TEXT NOT NULL,
            usd         DOUBLE PRECISION NOT NULL DEFAULT 0,
            calls       INTEGER NOT NULL DEFAULT 0,
            updated_at  DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (scope, period)
        )""",
    )


@migration
def m005_locks_and_push_order(cur: Cursor) -> None:
    """Named locks and the order in which each PR head's push arrived (one sequence for all PRs)."""
    _run(
        cur,
        """CREATE TABLE locks (
            name        TEXT PRIMARY KEY,
            owner       TEXT NOT NULL,
            expires_at  DOUBLE PRECISION NOT NULL
        )""",
        "CREATE SEQUENCE pr_heads_push_order",
        """CREATE TABLE pr_heads (
            repo        TEXT NOT NULL,
            pr_number   INTEGER NOT NULL,
            head_sha    TEXT NOT NULL,
            push_order  BIGINT NOT NULL,
            seen_at     DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (repo, pr_number, head_sha)
        )""",
    )


@migration
def m006_feedback(cur: Cursor) -> None:
    """What reviewers did with the findings (issue 17): one row per reviewed ADR of a PR, one per
    finding shown (adopted, dismissed, by whom): app/adr_review/adapters/feedback_sql.py."""
    _run(cur, *feedback_sql.tables("DOUBLE PRECISION"))
