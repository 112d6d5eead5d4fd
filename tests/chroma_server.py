"""A Chroma server for the tests: `chroma run` (the chromadb package's own server) on a free loopback
port with its data in a temporary folder, for the whole session; the App's indexes use it through
`chromadb.HttpClient` when ADR_REVIEW_CHROMA_URL names it (app/adr_review/adapters/chroma_store.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.postgres import _free_port


def start_chroma(port: int | None = None) -> tuple[subprocess.Popen[bytes], str, Path]:
    """`chroma run` on `port` (default: a free one), data in a new temporary folder; up when returned."""
    root = Path(tempfile.mkdtemp(prefix="adr-review-chroma-"))
    port = port or _free_port()
    chroma = Path(sys.executable).with_name("chroma")
    env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(root / "data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=(root / "server.log").open("wb"),
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=1) as resp:
                if resp.status == 200:
                    return proc, url, root
        except OSError:
            time.sleep(0.1)
    proc.kill()
    log = (root / "server.log").read_text(errors="replace")
    raise RuntimeError(f"chroma run did not come up on {url}:\n{log[-3000:]}")


def stop_chroma(proc: subprocess.Popen[bytes], root: Path) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def chroma_server() -> Iterator[str]:
    """The URL of the session's Chroma server."""
    proc, url, root = start_chroma()
    try:
        yield url
    finally:
        stop_chroma(proc, root)
