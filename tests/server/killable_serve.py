"""`adr-review serve` with test-only faults installed from outside (the kill matrix, ADR-0116):

    python -m tests.server.killable_serve [--kill-at SPEC] [--claim-barrier SPEC] <serve arguments>

--kill-at <stage>:<point>[:<plan|review>]  SIGKILL this process there. Stage points wrap the worker's
    memo: "before" (entering it), "start" (not checkpointed, about to compute), "during" (computed and
    paid for, not yet checkpointed), "after" (checkpointed). Run points wrap the store: run:claim
    (before the lease compare-and-set), run:complete (every stage done, before the run is marked
    completed).
--claim-barrier <dir>:<n>[:<plan|review>]  hold this process's first claim of that kind until n
    processes reached it (two workers claiming the same run at the same moment).
--pause-stage <stage> --pause-point <point> --pause-until <file>  hold the first review run there
    (printing "TEST PAUSE at ...") until the file exists: the test breaks a dependency meanwhile.

Production code knows nothing of this: it patches RunContext.memo and the claim / finish of both
StateStore engines in this process, then calls the real entrypoint, adr_review.cli.main(["serve", ...]).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.cli import main
from adr_review.pipeline.ports import StageMemo
from adr_review.pipeline.queue import QueueItem
from adr_review.pipeline.server.worker import RunContext

Hook = Callable[[str, str, QueueItem], None]


def _spec(text: str | None) -> list[str]:
    return text.split(":") if text else []


def pause_hook(stage: str, point: str, until: Path, inner: Hook) -> Hook:
    """`inner`, and the first review run held at (stage, point) until the file `until` exists."""
    paused = threading.Event()

    def hook(at_stage: str, at_point: str, item: QueueItem) -> None:
        inner(at_stage, at_point, item)
        if (at_stage, at_point) != (stage, point) or item.kind != "review" or paused.is_set():
            return
        paused.set()
        print(f"TEST PAUSE at {stage}:{point} run={item.run_key}", flush=True)
        while not until.exists():
            time.sleep(0.02)
        print(f"TEST RESUMED at {stage}:{point}", flush=True)

    return hook


def fault_hook(kill_at: str | None, barrier: str | None) -> Hook:
    kill, bar = _spec(kill_at), _spec(barrier)
    done = threading.Event()
    lock = threading.Lock()
    me = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"

    def hook(stage: str, point: str, item: QueueItem) -> None:
        if kill and (stage, point) == (kill[0], kill[1]) and (len(kill) < 3 or item.kind == kill[2]):
            print(f"TEST KILL at {stage}:{point} run={item.run_key}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if bar and (stage, point) == ("run", "claim") and (len(bar) < 3 or item.kind == bar[2]):
            with lock:
                if done.is_set():
                    return
                done.set()
            folder, n = Path(bar[0]), int(bar[1])
            folder.mkdir(parents=True, exist_ok=True)
            (folder / me).write_text(item.run_key)
            deadline = time.monotonic() + 30
            while len(list(folder.iterdir())) < n and time.monotonic() < deadline:
                time.sleep(0.005)
            print(f"TEST BARRIER passed run={item.run_key}", flush=True)

    return hook


def install(hook: Hook) -> None:
    """Wrap the worker's stage memo and the store's claim and completion with `hook`."""
    memo_of = RunContext.memo

    def memo(ctx: RunContext, salt: str | None = None) -> StageMemo:
        inner = memo_of(ctx, salt)

        def staged(
            stage: str, compute: Callable[[], dict[str, Any]], key: str | None = None
        ) -> dict[str, Any]:
            hook(stage, "before", ctx.item)

            def computed() -> dict[str, Any]:
                hook(stage, "start", ctx.item)
                result = compute()
                hook(stage, "during", ctx.item)
                return result

            result = inner(stage, computed, key)
            hook(stage, "after", ctx.item)
            return result

        return staged

    RunContext.memo = memo  # type: ignore[method-assign]
    from adr_review.adapters.state_postgres import PostgresStateStore

    for engine in (SqliteStateStore, PostgresStateStore):
        _wrap_store(engine, hook)


def _wrap_store(engine: Any, hook: Hook) -> None:
    claim, finish = engine.claim, engine.finish

    def claimed(store: Any, run_key: str, owner: str, ttl_s: float) -> QueueItem | None:
        item = store.item(run_key)
        if item is not None:
            hook("run", "claim", item)
        return claim(store, run_key, owner, ttl_s)  # type: ignore[no-any-return]

    def finished(store: Any, run_key: str, owner: str, state: str, error: str | None = None) -> bool:
        item = store.item(run_key)
        if state == "completed" and item is not None:
            hook("run", "complete", item)
        return finish(store, run_key, owner, state, error)  # type: ignore[no-any-return]

    engine.claim = claimed
    engine.finish = finished


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="killable_serve", add_help=False)
    parser.add_argument("--kill-at")
    parser.add_argument("--claim-barrier")
    parser.add_argument("--pause-stage")
    parser.add_argument("--pause-point", default="during")
    parser.add_argument("--pause-until", type=Path)
    ours, serve_args = parser.parse_known_args(argv)
    hook = fault_hook(ours.kill_at, ours.claim_barrier)
    if ours.pause_stage:
        hook = pause_hook(ours.pause_stage, ours.pause_point, ours.pause_until, hook)
    install(hook)
    return main(["serve", *serve_args])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
