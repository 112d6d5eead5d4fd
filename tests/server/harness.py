"""Real-process harness for the App tests: the fake Anthropic API, the fake GitHub API and
`adr-review serve` each in its own process on 127.0.0.1, sharing one store: a SQLite file on disk, or
a schema of a real PostgreSQL server (tests/postgres.py) with `stack.fresh(name, postgres=cluster)`.

A worker killed with SIGKILL loses nothing but its memory: the fakes keep counting across the restart
(LLM calls per prompt, comments created / edited), and the store is read directly to check runs,
checkpoints and attempts (the same SQL on both engines: their tables are the same).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from adr_review.core.webhook_signature import sign

REPO_ROOT = Path(__file__).resolve().parents[2]
SECRET = "e2e-webhook-secret"
REPO = "acme/decisions"
INSTALLATION = 4711
BASE = "b" * 40
HEAD = "c" * 40
PR = 7
ADR_PATH = "docs/adr/0004-use-a-durable-queue-for-reviews.md"

BASE_ADRS = {
    "docs/adr/0001-record-architecture-decisions.md": """# 1. Record architecture decisions

* Status: accepted
* Date: 2023-01-10

## Context

We need to record the architectural decisions made on this project.

## Decision

We will use Architecture Decision Records, as described by Michael Nygard, kept in docs/adr.

## Consequences

Every significant decision gets a short markdown file that is reviewed in a pull request.
""",
    "docs/adr/0002-use-postgresql-for-job-state.md": """# 2. Use PostgreSQL for job state

* Status: accepted
* Date: 2023-03-02

## Context

Background jobs need durable state that survives restarts of the worker processes.

## Decision

We will keep job state in PostgreSQL and claim jobs with SELECT FOR UPDATE SKIP LOCKED.

## Consequences

Workers can scale out horizontally; the database becomes a dependency of every worker.
""",
    "docs/adr/0003-at-least-once-webhook-delivery.md": """# 3. Treat webhooks as at-least-once

* Status: accepted
* Date: 2023-05-20

## Context

GitHub may deliver the same webhook more than once, and does not redeliver failed deliveries by itself.

## Decision

We will deduplicate webhook deliveries on their delivery id and make every handler idempotent.

## Consequences

Handlers must tolerate duplicates; a stored delivery id table grows and needs a retention policy.
""",
}

PROPOSAL = """# 4. Use a durable queue for reviews

* Status: proposed
* Date: 2024-02-01

## Context

Reviews of architecture decision records call a hosted language model and take minutes. The webhook
must be acknowledged within ten seconds and a worker can be killed at any time.

## Decision

We will store every webhook delivery and the review runs it implies in a SQLite queue, claim runs with
a lease, and checkpoint every stage so that a restarted worker resumes where the previous one stopped.

## Consequences

Every stage result is stored; the queue needs a watchdog for runs that stop making progress.
"""


def repo_seed(pulls: int = 1, adr_every: int = 1) -> dict[str, Any]:
    """One repository: three ADRs at the base, PR #7 (and more) adding the proposal at the head."""
    head_files = dict(BASE_ADRS)
    head_files[ADR_PATH] = PROPOSAL
    refs: dict[str, dict[str, str]] = {"main": dict(BASE_ADRS), BASE: dict(BASE_ADRS), HEAD: head_files}
    pr_specs: dict[str, Any] = {}
    for i in range(pulls):
        n = PR + i
        head = HEAD if i == 0 else f"{n:040x}"
        touches_adr = i % adr_every == 0
        if i:
            files = dict(BASE_ADRS, **({ADR_PATH: PROPOSAL} if touches_adr else {}))
            files["src/app.py"] = f"print({n})\n"
            refs[head] = files
        changed = [{"filename": ADR_PATH, "status": "added"}] if touches_adr else []
        changed.append({"filename": "src/app.py", "status": "modified"})
        pr_specs[str(n)] = {
            "head_sha": head,
            "base_sha": BASE,
            "base_ref": "main",
            "head_ref": f"feature-{n}",
            "user": "alice",
            "files": changed,
        }
    return {
        "repos": {
            REPO: {
                "default_branch": "main",
                "installation_id": INSTALLATION,
                "refs": refs,
                "pulls": pr_specs,
                "permissions": {"alice": "admin"},
            }
        }
    }


def pr_payload(number: int = PR, head: str = HEAD, action: str = "opened") -> dict[str, Any]:
    """A pull_request webhook body shaped like GitHub's (the real example, retargeted)."""
    recorded = REPO_ROOT / "tests" / "fixtures" / "github" / "pull_request__opened.payload.json"
    data: dict[str, Any] = json.loads(recorded.read_text(encoding="utf-8"))
    data["action"] = action
    data["number"] = number
    data["installation"] = {"id": INSTALLATION, "node_id": "x"}
    repo = data["repository"]
    repo["full_name"], repo["name"], repo["default_branch"] = REPO, REPO.split("/")[1], "main"
    pr = data["pull_request"]
    pr["number"], pr["draft"] = number, False
    pr["head"]["sha"], pr["base"]["sha"], pr["base"]["ref"] = head, BASE, "main"
    pr["head"]["repo"]["full_name"] = REPO
    pr["base"]["repo"]["full_name"] = REPO
    data["sender"] = {"login": "alice", "id": 2, "type": "User"}
    return data


def private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@dataclass
class Proc:
    """A child process whose stdout is drained by a thread (so it never blocks on a full pipe)."""

    name: str
    popen: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _cv: threading.Condition = field(default_factory=threading.Condition)
    _eof: bool = False

    def __post_init__(self) -> None:
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            with self._cv:
                self.lines.append(line.rstrip("\n"))
                self._cv.notify_all()
        with self._cv:
            self._eof = True
            self._cv.notify_all()

    def wait_for(self, prefix: str, timeout: float = 60.0) -> str:
        """The first output line starting with prefix; fails when the process ends or time runs out."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                found = next((line for line in self.lines if line.startswith(prefix)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self._eof:
                    raise AssertionError(f"{self.name}: no {prefix!r} line; output:\n{self.output()}")
                self._cv.wait(min(left, 0.5))

    def output(self) -> str:
        with self._cv:
            return "\n".join(self.lines[-200:])

    def wait_exit(self, timeout: float = 60.0) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.name} did not exit in {timeout}s; output:\n{self.output()}"
            ) from None

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)


def spawn(
    name: str, args: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Proc:
    full_env = dict(os.environ)
    full_env["PYTHONUNBUFFERED"] = "1"
    if cwd is not None:  # elsewhere than the repository: `-m tests....` must still import
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), full_env.get("PYTHONPATH")]))
    full_env.update(env or {})
    popen = subprocess.Popen(
        [sys.executable, *args],
        cwd=str(cwd or REPO_ROOT),
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    return Proc(name, popen)


def http_json(method: str, url: str, body: Any = None, timeout: float = 10.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


def post_webhook(
    port: int, event: str, payload: Mapping[str, Any], delivery: str | None = None, secret: str = SECRET
) -> tuple[int, Any]:
    body = json.dumps(payload).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/webhook",
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-GitHub-Hook-ID": "99",
            "X-Hub-Signature-256": sign(secret, body),
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Stack:
    """Fakes up for the whole module; `serve()` starts App processes on a shared store_dir."""

    def __init__(self, root: Path, *, llm_delay: float = 0.0) -> None:
        """llm_delay: seconds every fake model call takes (the benchmarks: a model's latency)."""
        self.root = root
        self.key = private_key_pem()
        self.seed_path = root / "github-seed.json"
        self.seed_path.write_text(json.dumps(repo_seed()), encoding="utf-8")
        llm_args = ["-m", "tests.server.fake_llm_proc", "--port", "0", "--delay", str(llm_delay)]
        self.llm = spawn("fake-anthropic", llm_args)
        self.gh = spawn(
            "fake-github", ["-m", "tests.fakes.github_server", "--port", "0", "--state", str(self.seed_path)]
        )
        self.llm_url = "http://127.0.0.1:" + self.llm.wait_for("PORT ").split()[1]
        self.gh_url = "http://127.0.0.1:" + self.gh.wait_for("PORT ").split()[1]
        self.apps: list[Proc] = []
        self.store_dir = root / "store"
        self.database_url: str | None = None  # PostgreSQL instead of <store_dir>/app.sqlite3
        self.chroma_url: str | None = None

    def fresh(self, name: str, *, postgres: Any = None, chroma_url: str | None = None) -> None:
        """A new store and zeroed fake counters for the next scenario (repos stay seeded). postgres:
        a tests/postgres.py Cluster, whose new schema is the store; chroma_url: a Chroma server."""
        self.store_dir = self.root / name
        self.database_url = postgres.new_url() if postgres is not None else None
        self.chroma_url = chroma_url
        http_json("POST", self.llm_url + "/_reset", {})
        http_json("POST", self.gh_url + "/_reset", {})

    def seed(self, doc: Mapping[str, Any]) -> None:
        http_json("POST", self.gh_url + "/_seed", doc)

    @property
    def db_path(self) -> Path:
        return self.store_dir / "app.sqlite3"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "ADR_REVIEW_WEBHOOK_SECRET": SECRET,
            "ADR_REVIEW_APP_ID": "1",
            "ADR_REVIEW_APP_PRIVATE_KEY": self.key,
            "ADR_REVIEW_GITHUB_API_URL": self.gh_url,
            "ADR_REVIEW_STORE_DIR": str(self.store_dir),
            "ANTHROPIC_API_KEY": "sk-fake",
            "ANTHROPIC_BASE_URL": self.llm_url,
            "ADR_REVIEW_LOG_LEVEL": "INFO",
            # the lease of 4 s below is renewed every 1.3 s: 2/3 of it outlasts a 2 s shutdown wait
            "ADR_REVIEW_SHUTDOWN_WAIT_S": "2",
        }
        if self.database_url:
            env["ADR_REVIEW_DATABASE_URL"] = self.database_url
        if self.chroma_url:
            env["ADR_REVIEW_CHROMA_URL"] = self.chroma_url
        env.update(extra)
        return env

    def serve(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        role: str = "all",
        ready: bool = True,
        kill_at: str | None = None,
        claim_barrier: str | None = None,
        pause: tuple[str, str, Path] | None = None,
        cwd: Path | None = None,
        store_dir: Path | None = None,
    ) -> tuple[Proc, int | None]:
        """`adr-review serve`; with kill_at / claim_barrier / pause (stage, point, release file), through
        tests/server/killable_serve.py, which installs those faults around the real entrypoint."""
        faults = [
            *(["--kill-at", kill_at] if kill_at else []),
            *(["--claim-barrier", claim_barrier] if claim_barrier else []),
            *(
                ["--pause-stage", pause[0], "--pause-point", pause[1], "--pause-until", str(pause[2])]
                if pause
                else []
            ),
        ]
        entry = ["-m", "tests.server.killable_serve", *faults] if faults else ["-m", "adr_review", "serve"]
        cmd = [
            *entry,
            "--role",
            role,
            "--port",
            "0",
            "--lease-ttl",
            "4",  # short, so a restarted worker takes over a killed one's run soon; renewed every 1.3 s
            "--poll",
            "0.05",
            *args,
        ]
        extra = dict(env or {})
        if store_dir is not None:  # a host of its own: nothing shared through files
            extra["ADR_REVIEW_STORE_DIR"] = str(store_dir)
        proc = spawn(f"serve-{len(self.apps)}", cmd, self.env(**extra), cwd=cwd)
        self.apps.append(proc)
        port = None
        if ready:
            if role == "worker":
                proc.wait_for("WORKER READY")
            else:
                port = int(proc.wait_for("LISTENING ").rsplit(":", 1)[1])
        return proc, port

    def stop_apps(self) -> None:
        for p in self.apps:
            p.stop()
        self.apps.clear()

    def close(self) -> None:
        self.stop_apps()
        self.llm.stop()
        self.gh.stop()

    def slow(self, prompt: str, seconds: float) -> None:
        """Every call of `prompt` at the fake Anthropic API takes `seconds` (until the next fresh())."""
        http_json("POST", self.llm_url + "/_slow", {"prompt": prompt, "seconds": seconds})

    # -- observations ------------------------------------------------------------------------------
    def llm_calls(self) -> dict[str, int]:
        data = http_json("GET", self.llm_url + "/_calls")
        return dict(data["by_prompt"])

    def gh_state(self) -> dict[str, Any]:
        state: dict[str, Any] = http_json("GET", self.gh_url + "/_state")
        return state

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of the store (by column name), SQLite or PostgreSQL: `?` placeholders either way."""
        if self.database_url:
            import psycopg
            from psycopg.rows import dict_row

            with psycopg.connect(self.database_url, row_factory=dict_row) as pg:
                if not params:  # no placeholders: a literal % (LIKE 'x%') stays as it is
                    return pg.execute(sql).fetchall()  # type: ignore[arg-type]
                return pg.execute(sql.replace("?", "%s"), list(params)).fetchall()  # type: ignore[arg-type]
        conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)
        conn.row_factory = sqlite3.Row
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def wait_until(self, what: str, cond: Callable[[], bool], timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if cond():
                    return
            except sqlite3.OperationalError:
                pass  # the file does not exist yet
            except Exception as exc:  # PostgreSQL: the tables are not migrated yet
                if type(exc).__module__.split(".")[0] != "psycopg":
                    raise
            time.sleep(0.1)
        logs = "\n---\n".join(p.name + ":\n" + p.output() for p in self.apps)
        raise AssertionError(f"timed out waiting for {what}\n{logs}")

    def settled(self, min_runs: int = 2) -> bool:
        rows = self.query("SELECT state FROM runs r JOIN queue q USING (run_key)")
        return len(rows) >= min_runs and all(r["state"] not in ("queued", "running") for r in rows)
