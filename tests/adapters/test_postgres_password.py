"""The database password reaches PostgreSQL whatever characters it has: compose.yaml passes it as
PGPASSWORD (libpq's own variable) beside a URL without one, and a URL-encoded one works too, against
a real server that checks it (a scram-sha-256 rule for one role on the session's cluster)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql

from adr_review.adapters.state_postgres import PostgresStateStore, StoreError

HOSTILE = "p@ss:w/rd?#x%2F y&'\"\\"  # every character that breaks a URL, and some that break SQL


@pytest.fixture
def role(postgres: Any) -> Iterator[tuple[str, str]]:
    """(role, URL without a password) for a role that must log in with HOSTILE."""
    name = "pw_" + uuid.uuid4().hex[:10]
    hba = postgres.root / "data" / "pg_hba.conf"
    rules = hba.read_text(encoding="utf-8")
    with psycopg.connect(postgres.base_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name), sql.Literal(HOSTILE))
        )
        conn.execute(
            sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(sql.Identifier(name), sql.Identifier(name))
        )
        hba.write_text(f"host all {name} 127.0.0.1/32 scram-sha-256\n" + rules, encoding="utf-8")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield name, f"postgresql://{name}@127.0.0.1:{postgres.port}/postgres?options=-csearch_path%3D{name}"
    finally:
        hba.write_text(rules, encoding="utf-8")
        with psycopg.connect(postgres.base_url, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")


def test_pgpassword_beside_a_url_without_one_opens_the_store(
    role: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url = role
    monkeypatch.delenv("PGPASSWORD", raising=False)
    with pytest.raises(StoreError):  # the rule is enforced: no password, no store
        PostgresStateStore(url, connect_timeout_s=5).close()
    monkeypatch.setenv("PGPASSWORD", HOSTILE)
    with PostgresStateStore(url, connect_timeout_s=10) as store:
        assert store.health()["store_ok"] is True
        assert HOSTILE not in store.location


def test_a_url_encoded_password_works_too_and_is_never_shown(
    role: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, url = role
    monkeypatch.delenv("PGPASSWORD", raising=False)
    encoded = url.replace(f"//{name}@", f"//{name}:{quote(HOSTILE, safe='')}@")
    with PostgresStateStore(encoded, connect_timeout_s=10) as store:
        assert store.health()["store_ok"] is True
        assert quote(HOSTILE, safe="") not in store.location and "***" in store.location
