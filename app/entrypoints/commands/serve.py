"""`adr-review serve`: the GitHub App — webhook server, durable queue, worker threads (docs/app.md).

Roles: `all` (default: HTTP + workers in one process), `web` (HTTP only), `worker` (workers only; several
worker processes on one host can share the SQLite file). Settings come from the environment
(app.config.AppSettings, ADR_REVIEW_*); flags override them.

Test hooks (read here and nowhere else; never set them in production):
  ADR_REVIEW_TEST_KILL_AT=<stage>:<before|during|after>[:<plan|review>]  SIGKILL this process there
      (run:claim and run:complete are points too: before the lease CAS, after all stages)
  ADR_REVIEW_TEST_CLAIM_BARRIER=<dir>:<n>[:<plan|review>]  hold the first claim of that kind until n
      processes reached it (two workers claiming the same run at once)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

log = logging.getLogger("adr_review.serve")

_STD_ATTRS = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class _Formatter(logging.Formatter):
    """One line per record; `extra=` fields appended as JSON so the logs stay greppable."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = {k: v for k, v in record.__dict__.items() if k not in _STD_ATTRS}
        if extra:
            line += " " + json.dumps(extra, default=str, ensure_ascii=False)
        return line


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="bind address (ADR_REVIEW_HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (ADR_REVIEW_PORT, default 8080)")
    parser.add_argument("--workers", type=int, help="worker threads (ADR_REVIEW_WORKERS, default 2)")
    parser.add_argument(
        "--db", type=Path, help="SQLite file (ADR_REVIEW_DB_PATH, default <store_dir>/app.sqlite3)"
    )
    parser.add_argument("--role", choices=("all", "web", "worker"), default="all")
    parser.add_argument(
        "--insecure-no-secret",
        action="store_true",
        help="accept unsigned webhooks (local development only; never on a reachable address)",
    )
    parser.add_argument(
        "--no-catch-up", action="store_true", help="do not redeliver missed deliveries on start"
    )
    parser.add_argument("--lease-ttl", type=float, help="seconds (ADR_REVIEW_LEASE_TTL_S, default 300)")
    parser.add_argument(
        "--stall-after", type=float, help="watchdog seconds (ADR_REVIEW_STALL_AFTER_S, default 3600)"
    )
    parser.add_argument("--max-attempts", type=int, help="per run (ADR_REVIEW_MAX_ATTEMPTS, default 3)")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between queue polls when idle")
    parser.add_argument("--log-level", default=None)


def run(args: argparse.Namespace) -> int:
    from app.config import AppSettings, Settings

    settings = AppSettings()
    base = Settings()
    logging.basicConfig(
        level=(args.log_level or base.log_level).upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    for h in logging.getLogger().handlers:
        h.setFormatter(_Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    workers = args.workers if args.workers is not None else settings.workers
    lease_ttl = args.lease_ttl or settings.lease_ttl_s
    stall_after = args.stall_after or settings.stall_after_s
    max_attempts = args.max_attempts or settings.max_attempts
    web = args.role in ("all", "web")
    if args.role == "web":
        workers = 0
    if web and not settings.webhook_secret and not args.insecure_no_secret:
        print(
            "adr-review serve: no webhook secret (set ADR_REVIEW_WEBHOOK_SECRET); refusing to start. "
            "For local development only, pass --insecure-no-secret.",
            file=sys.stderr,
        )
        return 2

    from app.adapters.queue_store import QueueStore
    from app.adapters.store import SqliteStore

    db = args.db or settings.db_path or (settings.store_dir / "app.sqlite3")
    store = SqliteStore(db)
    queue = QueueStore(store)
    auth = _app_auth(settings)

    pool = None
    if workers > 0:
        from app.pipeline.worker import WorkerConfig, WorkerPool

        executor = _executor(settings, base, queue, store, auth, max_attempts)
        pool = WorkerPool(
            queue,
            store,
            executor,
            WorkerConfig(
                lease_ttl_s=lease_ttl,
                stall_after_s=stall_after,
                poll_s=args.poll,
                retry_backoff_s=settings.retry_backoff_s,
            ),
            fault=_test_fault_hook(),
        ).start(workers)
        log.info("workers_started", extra={"workers": workers, "db": str(db), "lease_ttl_s": lease_ttl})

    stop = threading.Event()
    try:
        if web:
            _serve_http(settings, args, queue, pool, auth, host, port, max_attempts)
        else:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
            print("WORKER READY", flush=True)
            while not stop.wait(1.0):
                pass
    finally:
        if pool is not None:
            pool.stop()
        if auth is not None:
            auth.close()
        store.close()
    return 0


def _serve_http(
    settings: Any,
    args: argparse.Namespace,
    queue: Any,
    pool: Any,
    auth: Any,
    host: str,
    port: int,
    max_attempts: int,
) -> None:
    import uvicorn

    from app.entrypoints.server import WebhookConfig, create_app

    secret = None if args.insecure_no_secret and not settings.webhook_secret else settings.webhook_secret
    app = create_app(
        WebhookConfig(secret=secret, max_body_bytes=settings.max_body_bytes, max_attempts=max_attempts),
        queue,
        on_enqueued=pool.notify if pool is not None else None,
        health_extra=pool.facts if pool is not None else (lambda: {"workers_alive": None}),
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)

    def announce() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.02)
        if not server.started:
            return
        bound = port
        for s in getattr(server, "servers", []):
            for sock in s.sockets:
                bound = sock.getsockname()[1]
        print(f"LISTENING {host}:{bound}", flush=True)
        if settings.catch_up and not args.no_catch_up:
            _catch_up(auth, queue, settings.catch_up_window_s)

    threading.Thread(target=announce, name="startup", daemon=True).start()
    server.run()


def _catch_up(auth: Any, queue: Any, window_s: float) -> None:
    if auth is None:
        log.info("catch_up_skipped", extra={"why": "no App credentials (ADR_REVIEW_APP_ID + private key)"})
        return
    from app.pipeline.catchup import catch_up

    report = catch_up(auth, queue, now=time.time(), window_s=window_s)
    print(f"CATCH-UP listed={report.listed} redelivered={len(report.redelivered)}", flush=True)


def _app_auth(settings: Any) -> Any:
    if not settings.app_id:
        return None
    from app.adapters.github_app_auth import GitHubAppAuth, load_private_key

    key = load_private_key(key=settings.app_private_key, key_path=settings.app_private_key_path)
    return GitHubAppAuth(settings.app_id, key, api_url=settings.github_api_url)


def _executor(settings: Any, base: Any, queue: Any, store: Any, auth: Any, max_attempts: int) -> Any:
    from app.adapters.events import parse_event
    from app.adapters.github import GitHubAdapter
    from app.adapters.llm import make_llm
    from app.adapters.remote_folder import BlobCache, load_remote_folder
    from app.pipeline.app_runs import AppDeps, AppExecutor

    api_url = settings.github_api_url
    static_token = os.environ.get("ADR_REVIEW_GITHUB_TOKEN") or os.environ.get("GITHUB_TOKEN")
    adapters: dict[str, Any] = {}
    lock = threading.Lock()

    def github_for(installation_id: int | None) -> Any:
        if auth is not None and installation_id is not None:
            token = auth.installation_token(installation_id)
        elif static_token:
            token = static_token
        else:
            raise RuntimeError(
                "no GitHub credentials: set ADR_REVIEW_APP_ID + private key (or a token for dev)"
            )
        with lock:  # one adapter per token; a refreshed token gets a new one
            if token not in adapters:
                adapters.clear()
                adapters[token] = GitHubAdapter(token, base_url=api_url, seconds_between_writes=None)
            return adapters[token]

    cache = BlobCache()

    def load_folder(gh: Any, repo: str, ref: str, adr_dir: str) -> Any:
        return load_remote_folder(gh, repo, ref, adr_dir, cache)

    index_dir = settings.store_dir / "index"

    def index_for(repo: str, adr_dir: str, folder: Any, config: Any) -> Any:
        return _LazyIndex(_index_path(index_dir, repo, adr_dir), config, folder)

    from app.adapters.adr_files import is_adr_candidate

    deps = AppDeps(
        queue=queue,
        store=store,
        github_for=github_for,
        llm_for=lambda config: make_llm(base, config),
        index_for=index_for,
        load_folder=load_folder,
        parse_event=parse_event,
        accept_path=is_adr_candidate,
        web_url=_web_url(api_url),
        recall_enabled=base.recall_enabled,
        max_attempts=max_attempts,
    )
    return AppExecutor(deps)


class _LazyIndex:
    """The repo's ADR index, opened and synced on first use: a run whose recall is disabled never
    imports chromadb, and an index that cannot be opened fails recall's retrieval step (recall
    degrades and the comment says the search failed) instead of the whole review. One index folder
    per repo and ADR folder; a lock per folder, since worker threads may review the same repo."""

    _locks: dict[Path, threading.Lock] = {}
    _guard = threading.Lock()

    def __init__(self, path: Path, config: Any, folder: Any) -> None:
        self._path = path
        self._config = config
        self._folder = folder
        self._index: Any = None
        with _LazyIndex._guard:
            self._lock = _LazyIndex._locks.setdefault(path, threading.Lock())

    def _get(self) -> Any:
        with self._lock:
            if self._index is None:
                from app.pipeline.retrieval import open_index

                index = open_index(self._path, self._config.retrieval)
                index.sync(self._folder)
                self._index = index
            return self._index

    def sync(self, adrs: Any) -> Any:
        self._folder = adrs
        return self._get().sync(adrs)

    def search(self, query: str, **kw: Any) -> Any:
        index = self._get()
        with self._lock:
            return index.search(query, **kw)


def _index_path(root: Path, repo: str, adr_dir: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{repo}/{adr_dir or '_root'}").strip("_")
    return root / slug


def _web_url(api_url: str) -> str:
    """https://api.github.com -> https://github.com; https://HOST/api/v3 -> https://HOST (GHES)."""
    url = api_url.rstrip("/")
    if url == "https://api.github.com":
        return "https://github.com"
    if url.endswith("/api/v3"):
        return url[: -len("/api/v3")]
    return url


# -- test hooks ------------------------------------------------------------------------------------------


def _test_fault_hook() -> Any:
    kill_at = os.environ.get("ADR_REVIEW_TEST_KILL_AT", "").strip()
    barrier = os.environ.get("ADR_REVIEW_TEST_CLAIM_BARRIER", "").strip()
    if not kill_at and not barrier:
        from app.pipeline.worker import no_fault

        return no_fault
    kill = kill_at.split(":") if kill_at else []
    bar = barrier.split(":") if barrier else []
    state = {"barrier_done": False}
    lock = threading.Lock()
    me = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"

    def hook(stage: str, point: str, item: Any) -> None:
        if kill and stage == kill[0] and point == kill[1] and (len(kill) < 3 or item.kind == kill[2]):
            print(f"TEST KILL at {stage}:{point} run={item.run_key}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if bar and stage == "run" and point == "claim" and (len(bar) < 3 or item.kind == bar[2]):
            with lock:
                if state["barrier_done"]:
                    return
                state["barrier_done"] = True
            folder, n = Path(bar[0]), int(bar[1])
            folder.mkdir(parents=True, exist_ok=True)
            (folder / me).write_text(item.run_key)
            deadline = time.monotonic() + 30
            while len(list(folder.iterdir())) < n and time.monotonic() < deadline:
                time.sleep(0.005)
            print(f"TEST BARRIER passed run={item.run_key}", flush=True)

    return hook
