"""What the fake HTTP services share: a threaded JSON server on 127.0.0.1 that runs in-process
(`start()` / `stop()` or a `with` block) or as its own process that prints `PORT <n>` and serves until
killed, so a subprocess that gets SIGKILLed and restarted talks to the same fake."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
        pass

    def write_response(self, status: int, data: bytes, *headers: Mapping[str, str]) -> None:
        """One response, the header maps in order; a client that already gave up (a timeout test)
        is not the server's error."""
        try:
            self.send_response(status)
            for group in headers:
                for k, v in group.items():
                    self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def read_json(self) -> Any:
        """The request body as JSON ({} when empty); raises ValueError when it is not JSON."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw else {}


class _Server(ThreadingHTTPServer):
    """A threaded server that knows its open connections: stopping closes them, so a handler thread
    waiting on a client's kept-alive connection (the SDKs pool theirs) ends with the fake instead of
    outliving it (a later test that forks, or counts threads, would see it)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._open_lock:
            still = list(self._open)
        for conn in still:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class LocalServer:
    """Lifecycle of a fake: subclasses give `handler()` (their routes) and keep their own state."""

    thread_name = "fake-http"
    poll_interval = 0.5  # how soon stop() is noticed by serve_forever

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def start(self) -> Self:
        self._httpd = _Server((self._host, self._port), self.handler())
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": self.poll_interval},
            name=self.thread_name,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.close_connections()  # the handlers waiting on kept-alive connections end
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}"


def serve_until_interrupted(server: LocalServer) -> int:
    """The out-of-process mode: start, print `PORT <n>` for the parent to read, serve until killed."""
    server.start()
    print(f"PORT {server.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
