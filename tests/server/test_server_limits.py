"""What unauthenticated requests can make the server hold (issue 16): the webhook buffers a body before
it can check its signature, so the body cap and uvicorn's concurrency limit (`adr-review serve`'s own
settings, app/adr_review/entrypoints/commands/serve.py::http_config) bound it. A real uvicorn on loopback."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.entrypoints.commands.serve import http_config
from adr_review.entrypoints.server import WebhookConfig, create_app
from tests.server.conftest import SECRET


@pytest.fixture
def server(queue: SqliteStateStore) -> Iterator[tuple[int, Any]]:
    app = create_app(WebhookConfig(secret=SECRET), queue)
    srv = uvicorn.Server(http_config(app, "127.0.0.1", 0, max_connections=3))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.01)
    port = next(sock.getsockname()[1] for s in srv.servers for sock in s.sockets)
    yield port, srv
    srv.should_exit = True
    thread.join(10)


def status_of(port: int, method: str, path: str, body: bytes = b"") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        return conn.getresponse().status
    finally:
        conn.close()


def test_beyond_the_concurrency_limit_requests_are_refused_at_once(server: tuple[int, Any]) -> None:
    port, _ = server
    slow = []
    for _ in range(2):  # two clients that announce a body and send it very slowly
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"{" * 10)
        slow.append(s)
    time.sleep(0.3)
    started = time.monotonic()
    assert status_of(port, "GET", "/healthz") == 503  # no third body is read: refused, not queued
    assert time.monotonic() - started < 1.0
    for s in slow:
        s.close()
    time.sleep(0.3)
    assert status_of(port, "POST", "/webhook", b"{}") == 401  # served again once they are gone
