"""A throwaway PostgreSQL server for the tests: Debian's packages (`apt-get install postgresql`,
`.ci/run` does it), a cluster made with initdb in a temporary folder and started with pg_ctl on a free
loopback port, for the whole session; each test gets a schema of its own (`Cluster.new_url()`).

PostgreSQL refuses to run as root: as root, the cluster belongs to an unprivileged user (`pgtest`,
created when missing). Without PostgreSQL the tests that need it are skipped, with the reason, except
under CI (`CI=true`), where that is an error: CI must run them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

OS_USER = "pgtest"
DB_USER = "adr"


@dataclass
class Cluster:
    root: Path
    port: int
    bindir: Path
    options: str = ""  # the server's command-line options (pg_ctl -o), to start it again

    def stop_server(self) -> None:
        """A fast shutdown (`pg_ctl stop -m fast`): connections are terminated, the data stays."""
        done = _run_as_owner(
            [str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "fast", "stop"]
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl stop failed: {done.stderr}")

    def start_server(self) -> None:
        """Start the stopped server again, on the same port and data, and wait until it accepts."""
        done = _pg_ctl_start(self.bindir, self.root, self.options)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {done.stderr}")

    @property
    def base_url(self) -> str:
        return f"postgresql://{DB_USER}@127.0.0.1:{self.port}/postgres"

    def new_url(self) -> str:
        """A fresh, empty schema and the URL whose connections use it (search_path)."""
        import psycopg

        schema = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.base_url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return f"{self.base_url}?options=-csearch_path%3D{schema}"

    def stop(self) -> None:
        _run_as_owner([str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop"])
        shutil.rmtree(self.root, ignore_errors=True)

    def restart(self) -> None:
        """`pg_ctl restart -m fast`, as an operator does: every connection is cut (AdminShutdown), and
        the server is back a moment later on the same port."""
        self._pg_ctl("-l", str(self.root / "server.log"), "-m", "fast", "-w", "restart")

    def _pg_ctl(self, *args: str) -> None:
        done = _run_as_owner([str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), *args])
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {' '.join(args)} failed: {done.stderr}")


def find_bindir() -> Path | None:
    """Where initdb and pg_ctl live: Debian keeps them in /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: p.parts[-3])
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as_owner(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        cmd = ["runuser", "-u", OS_USER, "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def start_cluster() -> Cluster:
    bindir = find_bindir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL is not installed (apt-get install -y postgresql)")
    root = Path(tempfile.mkdtemp(prefix="adr-review-pg-"))
    if os.geteuid() == 0:
        if subprocess.run(["id", OS_USER], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "--system", "--no-create-home", OS_USER], check=True)
        shutil.chown(root, OS_USER)
    data, sockets = root / "data", root / "sockets"
    done = _run_as_owner(
        [str(bindir / "initdb"), "-D", str(data), "-U", DB_USER, "--auth=trust", "-E", "UTF8", "--no-sync"]
    )
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed: {done.stderr}")
    _run_as_owner(["mkdir", str(sockets)])
    port = _free_port()
    options = (
        f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c max_connections=300 "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    )
    done = _pg_ctl_start(bindir, root, options)
    if done.returncode != 0:
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {done.stderr}\n{log}")
    return Cluster(root, port, bindir, options)


def _pg_ctl_start(bindir: Path, root: Path, options: str) -> subprocess.CompletedProcess[str]:
    data, log = root / "data", root / "server.log"
    return _run_as_owner(
        [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"]
    )


@pytest.fixture(scope="session")
def postgres() -> Iterator[Cluster]:
    """The session's PostgreSQL server (skipped without PostgreSQL, an error under CI=true)."""
    try:
        cluster = start_cluster()
    except FileNotFoundError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and {exc}: the PostgreSQL tests must run in CI", pytrace=False)
        pytest.skip(str(exc))
    try:
        yield cluster
    finally:
        cluster.stop()
