"""`adr-review serve`: the GitHub App — webhook server, durable queue, worker threads (docs/app.md).

Roles: `all` (default: HTTP + workers in one process), `web` (HTTP only), `worker` (workers only).
State: the SQLite file (several processes on one host can share it), or PostgreSQL with
ADR_REVIEW_DATABASE_URL; the ADR indexes: embedded Chroma under the store folder, or a Chroma server
with ADR_REVIEW_CHROMA_URL. With both, web and worker processes on several hosts share nothing else.
Settings come from the environment (adr_review.config.AppSettings, ADR_REVIEW_*); flags override them.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from adr_review.entrypoints.commands.common import ExtraFormatter
from adr_review.entrypoints.commands.serve_auth import app_auth, missing_credentials

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

    from adr_review.adapters.github import GitHubClients
    from adr_review.config import AppSettings, RepoConfig, Settings
    from adr_review.core.adr import Adr
    from adr_review.core.results import RetrievalResult
    from adr_review.pipeline.ports import AdrIndex, GitHubPort, SyncReport
    from adr_review.pipeline.server.app_runs import AppExecutor
    from adr_review.pipeline.server.worker import WorkerPool
    from adr_review.pipeline.state_ports import Locks, StateStore

log = logging.getLogger("adr_review.serve")


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
        "--no-catch-up",
        action="store_true",
        help="do not redeliver missed deliveries (on start and every ADR_REVIEW_CATCH_UP_EVERY_S)",
    )
    parser.add_argument("--lease-ttl", type=float, help="seconds (ADR_REVIEW_LEASE_TTL_S, default 300)")
    parser.add_argument(
        "--shutdown-wait",
        type=float,
        help="seconds a stopping worker waits for the stages in flight (ADR_REVIEW_SHUTDOWN_WAIT_S, default 10)",
    )
    parser.add_argument(
        "--stall-after", type=float, help="watchdog seconds (ADR_REVIEW_STALL_AFTER_S, default 3600)"
    )
    parser.add_argument("--max-attempts", type=int, help="per run (ADR_REVIEW_MAX_ATTEMPTS, default 3)")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between queue polls when idle")
    parser.add_argument("--log-level", default=None)


def run(args: argparse.Namespace) -> int:
    try:  # the [app] extra: the CLI and the Action run without it
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        print(
            f"adr-review serve: {exc.name} is not installed: pip install 'adr-review[app]'", file=sys.stderr
        )
        return 2
    from adr_review.config import AppSettings, Settings

    settings = AppSettings()
    base = Settings()
    logging.basicConfig(
        level=(args.log_level or base.log_level).upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    for h in logging.getLogger().handlers:
        h.setFormatter(ExtraFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    workers = args.workers if args.workers is not None else settings.workers
    lease_ttl = args.lease_ttl or settings.lease_ttl_s
    shutdown_wait = args.shutdown_wait if args.shutdown_wait is not None else settings.shutdown_wait_s
    stall_after = args.stall_after or settings.stall_after_s
    max_attempts = args.max_attempts or settings.max_attempts
    web = args.role in ("all", "web")
    if args.role == "web":
        workers = 0
    missing = missing_credentials(settings, web=web, insecure_no_secret=args.insecure_no_secret)
    if missing:
        print(f"adr-review serve: {missing} Refusing to start.", file=sys.stderr)
        return 2
    try:
        auth = app_auth(settings)
    except (OSError, ValueError) as exc:  # an unreadable key file, a key that is no PEM
        print(f"adr-review serve: the GitHub App private key: {exc}; refusing to start.", file=sys.stderr)
        return 2

    if workers > 0:
        from adr_review.pipeline.server.worker import lease_problem

        problem = lease_problem(lease_ttl, shutdown_wait)
        if problem is not None:
            print(f"adr-review serve: {problem}; refusing to start.", file=sys.stderr)
            return 2

    store, db = open_store(settings, args.db)
    if settings.chroma_url:
        from adr_review.adapters.chroma_store import ChromaTimeouts, use_chroma_server

        timeouts = ChromaTimeouts(
            connect_s=settings.chroma_connect_timeout_s,
            read_s=settings.chroma_read_timeout_s,
            retries=settings.chroma_retries,
        )
        use_chroma_server(settings.chroma_url, settings.chroma_token, timeouts)

    pool = None
    if workers > 0:
        from adr_review.pipeline.server.worker import WorkerConfig, WorkerPool

        executor = _executor(settings, base, store, auth, max_attempts)
        pool = WorkerPool(
            store,
            executor,
            WorkerConfig(
                lease_ttl_s=lease_ttl,
                stall_after_s=stall_after,
                poll_s=args.poll,
                retry_backoff_s=settings.retry_backoff_s,
                shutdown_wait_s=shutdown_wait,
            ),
        ).start(workers)
        log.info("workers_started", extra={"workers": workers, "db": db, "lease_ttl_s": lease_ttl})

    stop = threading.Event()
    try:
        if web:
            _serve_http(settings, args, store, pool, auth, host, port, max_attempts)
        else:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
            from adr_review.entrypoints.liveness import Liveness, default_path

            beats = Liveness(
                settings.heartbeat_file or default_path(settings.store_dir),
                workers,
                lambda: {**store.health(), **(pool.facts() if pool is not None else {"workers_alive": 0})},
                settings.heartbeat_every_s,
            )
            beats.tick()
            print("WORKER READY", flush=True)
            while not stop.wait(1.0):
                beats.tick()
    finally:
        if pool is not None:
            pool.stop()
        if auth is not None:
            auth.close()
        store.close()
    return 0


def _serve_http(
    settings: AppSettings,
    args: argparse.Namespace,
    queue: StateStore,
    pool: WorkerPool | None,
    auth: GitHubClients,
    host: str,
    port: int,
    max_attempts: int,
) -> None:
    import uvicorn

    from adr_review.entrypoints.server import WebhookConfig, create_app

    secret = None if args.insecure_no_secret and not settings.webhook_secret else settings.webhook_secret
    app = create_app(
        WebhookConfig(secret=secret, max_body_bytes=settings.max_body_bytes, max_attempts=max_attempts),
        queue,
        on_enqueued=pool.notify if pool is not None else None,
        health_extra=pool.facts if pool is not None else (lambda: {"workers_alive": None}),
        feedback=queue,
        report_token=settings.report_token,
    )
    server = uvicorn.Server(http_config(app, host, port, settings.max_connections))

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
            _catch_up(auth, queue, settings, stopped)

    stopped = threading.Event()
    threading.Thread(target=announce, name="catch-up", daemon=True).start()
    # uvicorn raises the signal it stopped on again once it is done: under the default handler SIGTERM
    # would then end the process before the workers hand their runs back (pool.stop() in run()).
    signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        server.run()
    finally:
        stopped.set()


def open_store(settings: AppSettings, db: Path | None = None) -> tuple[StateStore, str]:
    """The process's StateStore and where it is (for the logs, the password left out): PostgreSQL
    when ADR_REVIEW_DATABASE_URL is set, else the SQLite file."""
    if settings.database_url:
        from adr_review.adapters.state_postgres import PostgresStateStore

        store = PostgresStateStore(settings.database_url, pool_size=settings.db_pool_size)
        return store, store.location
    from adr_review.adapters.state_sqlite import SqliteStateStore

    path = db or settings.db_path or (settings.store_dir / "app.sqlite3")
    return SqliteStateStore(path), str(path)


def http_config(app: Starlette, host: str, port: int, max_connections: int) -> uvicorn.Config:
    """uvicorn's settings: beyond `max_connections` open connections or requests in flight, new
    requests get 503 at once (bodies are read before their signature is checked: this, times the body
    cap, bounds the memory unauthenticated requests can take)."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        limit_concurrency=max_connections,
        timeout_keep_alive=5,
    )


def _catch_up(
    auth: GitHubClients | None, queue: StateStore, settings: AppSettings, stop: threading.Event
) -> None:
    """Catch-up in this web process: a pass on start, then one every catch_up_every_s until it stops."""
    if auth is None or not auth.has_app:
        log.info("catch_up_skipped", extra={"why": "no App credentials (ADR_REVIEW_APP_ID + private key)"})
        return
    from adr_review.pipeline.server.catchup import CatchUp, CatchUpReport, keep_catching_up
    from adr_review.pipeline.server.worker import default_owner

    passes = 0

    def announce(report: CatchUpReport) -> None:  # the start's pass on stdout; every pass is logged
        nonlocal passes
        passes += 1
        if passes == 1:
            print(f"CATCH-UP listed={report.listed} redelivered={len(report.redelivered)}", flush=True)

    keep_catching_up(
        CatchUp(auth.deliveries(), queue, settings.catch_up_window_s),
        queue,
        f"{default_owner()}:catch-up",
        every_s=settings.catch_up_every_s,
        stop=stop,
        on_pass=announce,
    )


def _executor(
    settings: AppSettings, base: Settings, store: StateStore, auth: GitHubClients, max_attempts: int
) -> AppExecutor:
    from adr_review.adapters.llm import make_llm
    from adr_review.adapters.remote_folder import BlobCache, load_remote_folder
    from adr_review.pipeline.server.app_runs import AppDeps, AppExecutor
    from adr_review.prompts import packaged

    api_url = settings.github_api_url

    def github_for(installation_id: int | None, repo: str, delivery_id: str | None) -> GitHubPort:
        """One run's GitHubPort: a token for its repository; the delivery id on every request."""
        return auth.for_run(installation_id, repo, delivery_id)

    cache = BlobCache()

    def load_folder(gh: GitHubPort, repo: str, ref: str, adr_dir: str) -> tuple[list[Adr], list[str]]:
        return load_remote_folder(gh, repo, ref, adr_dir, cache)

    index_dir = settings.store_dir / "index"

    def open_index(repo: str, adr_dir: str, config: RepoConfig) -> AdrIndex:
        from adr_review.adapters.index_open import open_index
        from adr_review.pipeline.keys import index_slot

        slot = index_slot(repo, adr_dir)
        path = index_dir / slot
        # A Chroma server holds every repository's folders: one collection each, named by the slot.
        collection = slot if settings.chroma_url else "adrs"
        return _LockedIndex(open_index(path, config.retrieval, collection=collection), slot, store)

    deps = AppDeps(
        store=store,
        github_for=github_for,
        llm_for=lambda config: make_llm(base, config),
        open_index=open_index,
        load_folder=load_folder,
        prompts=packaged(),
        web_url=_web_url(api_url),
        recall_enabled=base.recall_enabled,
        max_attempts=max_attempts,
    )
    return AppExecutor(deps)


class _LockedIndex:
    """Worker threads may review the same repo at once: one lock per index around its use. A sync also
    takes the store's lock of the index: processes on other hosts (one Chroma server) then never write
    one collection at the same time (two first syncs would both create it)."""

    _locks: dict[str, threading.Lock] = {}
    _guard = threading.Lock()

    def __init__(self, index: AdrIndex, slot: str, store: Locks) -> None:
        self._index = index
        self._slot = slot
        self._store = store
        with _LockedIndex._guard:
            self._lock = _LockedIndex._locks.setdefault(slot, threading.Lock())

    def sync(self, adrs: Sequence[Adr]) -> SyncReport:
        from adr_review.pipeline.locks import StoreLocks
        from adr_review.pipeline.server.worker import default_owner

        held = StoreLocks(self._store, f"{default_owner()}:{threading.get_ident()}", wait_s=900.0)
        with self._lock, held(f"index:{self._slot}"):
            return self._index.sync(adrs)

    def search(
        self,
        query: str,
        *,
        top_n: int = 20,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
    ) -> RetrievalResult:
        with self._lock:
            return self._index.search(query, top_n=top_n, exclude_paths=exclude_paths, pool=pool)


def _web_url(api_url: str) -> str:
    """https://api.github.com -> https://github.com; https://HOST/api/v3 -> https://HOST (GHES)."""
    url = api_url.rstrip("/")
    if url == "https://api.github.com":
        return "https://github.com"
    if url.endswith("/api/v3"):
        return url[: -len("/api/v3")]
    return url
