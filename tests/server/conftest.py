"""Fixtures for the App server tests: a SQLite store + queue, real payloads, signed requests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.adapters.queue_store import QueueStore
from app.adapters.store import SqliteStore
from app.core.webhook_signature import sign
from tests.server.harness import Stack

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
PAYLOADS = SHARED / "github-payloads"
SECRET = "test-webhook-secret"


def payload(name: str) -> dict[str, Any]:
    path = PAYLOADS / name
    assert path.is_file(), f"shared payload missing: {path} (shared/ must sit beside the repo)"
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
def queue(tmp_path: Path) -> Iterator[QueueStore]:
    store = SqliteStore(tmp_path / "app.sqlite3")
    yield QueueStore(store)
    store.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The fake Anthropic and GitHub processes, shared by one test module (see harness.py)."""
    s = Stack(tmp_path_factory.mktemp("stack"))
    yield s
    s.close()
