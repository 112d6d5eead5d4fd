"""The worker role's liveness signal. A `--role worker` process serves no HTTP, so an orchestrator has
nothing to probe: instead the process rewrites a heartbeat file every BEAT_EVERY_S seconds while it is
healthy (every worker thread alive, the lease heartbeat and the watchdog threads alive, the store
answering), and `adr-review health --worker` (the container's healthcheck) fails once the file is
older than its max age. A worker that hangs (its main loop stuck, the store not answering) or whose
threads died stops beating, so the check fails and the orchestrator can restart it (docs/app.md).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("adr_review.liveness")

BEAT_EVERY_S = 10.0
DEFAULT_MAX_AGE_S = 60.0  # six missed beats: a slow store query is not a hang


def default_path(store_dir: Path) -> Path:
    return store_dir / "worker.heartbeat"


def unhealthy(facts: Mapping[str, Any], workers: int) -> str | None:
    """Why a worker process with these facts (WorkerPool.facts + the store's health) must not beat."""
    alive = facts.get("workers_alive")
    if alive != workers:
        return f"{alive} of {workers} worker threads alive"
    if facts.get("background_alive") is False:
        return "the lease heartbeat or the watchdog thread is not running"
    if not facts.get("store_ok", False):
        return f"the state store does not answer ({facts.get('store_error', 'no answer')})"
    return None


def beat(path: Path, facts: Mapping[str, Any]) -> None:
    """Rewrite the heartbeat file (atomically: the check never reads half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"at": time.time(), **facts}, default=str), encoding="utf-8")
    os.replace(tmp, path)


def stale(path: Path, max_age_s: float, now: float | None = None) -> str | None:
    """Why the heartbeat at `path` does not show a live worker, or None when it does."""
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except FileNotFoundError:
        return f"no heartbeat file at {path} (is a `serve --role worker` process running with this store folder?)"
    except OSError as exc:
        return f"cannot read the heartbeat file {path}: {exc.strerror or exc}"
    if age > max_age_s:
        return f"the last heartbeat is {age:.0f} s old (more than {max_age_s:g} s): the worker is hung or stopped"
    return None


class Liveness:
    """Called from the worker role's main loop: beats every `every_s` while the process is healthy."""

    def __init__(
        self, path: Path, workers: int, facts: Callable[[], Mapping[str, Any]], every_s: float = BEAT_EVERY_S
    ) -> None:
        self.path = path
        self.workers = workers
        self.facts = facts
        self.every_s = every_s
        self._next = 0.0
        self._said: str | None = None

    def tick(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if now < self._next:
            return
        self._next = now + self.every_s
        facts = self.facts()
        why = unhealthy(facts, self.workers)
        if why is not None:
            if why != self._said:
                log.warning("worker_unhealthy", extra={"why": why, "heartbeat_file": str(self.path)})
            self._said = why
            return
        if self._said is not None:
            log.info("worker_healthy_again", extra={"heartbeat_file": str(self.path)})
            self._said = None
        try:
            beat(self.path, facts)
        except OSError as exc:
            log.warning("heartbeat_write_failed", extra={"path": str(self.path), "error": str(exc)})
