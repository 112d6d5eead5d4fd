"""Shared fixtures. Keep small: fakes live in tests/fakes/, at the ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.chroma_server import chroma_server  # noqa: F401  (a `chroma run` server, tests/chroma_server.py)
from tests.fakes.messages_server import FakeMessagesServer
from tests.postgres import postgres  # noqa: F401  (the session's PostgreSQL server, tests/postgres.py)


@pytest.fixture
def fake_anthropic() -> Iterator[FakeMessagesServer]:
    """A fresh fake Anthropic Messages API on 127.0.0.1 (see tests/fakes/messages_server.py)."""
    with FakeMessagesServer() as server:
        yield server
