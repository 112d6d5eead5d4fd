"""Fixtures for the App server tests: a SQLite state store, real payloads, signed requests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.core.webhook_signature import sign
from tests.server.harness import Stack

PAYLOADS = Path(__file__).resolve().parents[1] / "fixtures" / "github"  # real GitHub payloads, see README.md
SECRET = "test-webhook-secret"


def payload(name: str) -> dict[str, Any]:
    path = PAYLOADS / name
    assert path.is_file(), f"payload fixture missing: {path}"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def signed_headers(
    body: bytes, event: str, delivery: str | None = None, secret: str = SECRET
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "4242",
        "X-Hub-Signature-256": sign(secret, body),
    }


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[SqliteStateStore]:
    store = SqliteStateStore(tmp_path / "app.sqlite3")
    yield store
    store.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The fake Anthropic and GitHub processes, shared by one test module (see harness.py)."""
    s = Stack(tmp_path_factory.mktemp("stack"))
    yield s
    s.close()
