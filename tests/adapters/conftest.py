"""Fixtures shared by the adapter tests."""

from __future__ import annotations

import threading
import time

import pytest

from adr_review.adapters import parse_pool


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two usable cores, and this process down to its one thread: the parse pool forks only then,
    and an earlier test's thread that is still winding down (a fake server, a client's pool) must not
    decide these tests. One that does not end is named in the failure."""
    monkeypatch.setattr(parse_pool, "usable_cores", lambda: 2)
    deadline = time.monotonic() + 60
    for other in [t for t in threading.enumerate() if t is not threading.main_thread()]:
        other.join(timeout=max(0.0, deadline - time.monotonic()))
    left = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    assert not left, f"threads still running before a pool test: {left}"
