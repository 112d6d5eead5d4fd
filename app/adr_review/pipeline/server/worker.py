"""Workers of the durable queue: claim a run (compare-and-set lease), execute its stages through the
checkpoint memo, and settle it in a terminal state (seed 004 / ADR-0116's kill matrix).

- Claim: `StateStore.claim` takes the lease only if it is free or expired; a worker that loses the race
  records a `skipped-locked` attempt (stage "run") and moves on. Threads of one process also skip a run
  another local thread is claiming, so in-process contention does not flood the audit trail.
- Execute: every stage goes through `memo_for` (checkpointed results are reused, `skipped-checkpoint`),
  wrapped so that each stage boundary restarts the watchdog clock and checks for cancellation (a newer
  head SHA superseded the run) or a lost lease.
- Settle: completed; on an error, back to the queue with back-off while attempts remain, else failed
  with the error; a worker killed mid-run leaves its lease to expire and the run is reclaimed by
  anyone, resuming at its first unfinished stage. A run claimed more often than max_attempts (its
  workers kept dying) is failed.
- Heartbeat renews the leases of the runs in progress every ttl/3, until the worker threads have stopped:
  during a shutdown a run still in progress stays this process's, so nobody takes it over (and pays its
  stages again) while it still runs. The watchdog fails runs with no stage progress for `stall_after_s`
  (default 60 min) and flags them `stalled_by_watchdog`.
- Shutdown (`stop`): no new claims; a run in progress stops at its next stage boundary (the stage in
  flight finishes and is checkpointed), is recorded `interrupted: worker shut down` and its lease freed,
  so another worker resumes it at once with nothing paid twice. Runs still in a stage after
  `shutdown_wait_s` are recorded and freed the same way (that one stage is paid again).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from adr_review.pipeline.checkpoint import memo_for
from adr_review.pipeline.ports import InfrastructureError, RunAbandoned, StageMemo
from adr_review.pipeline.queue import QueueItem
from adr_review.pipeline.state_ports import StateStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerConfig:
    lease_ttl_s: float = 300.0
    retry_backoff_s: float = 30.0
    stall_after_s: float = 3600.0
    poll_s: float = 1.0
    batch: int = 8
    watchdog_every_s: float = 60.0
    shutdown_wait_s: float = 10.0  # how long stop() waits for a stage in flight


def lease_problem(lease_ttl_s: float, shutdown_wait_s: float) -> str | None:
    """Why a lease TTL is too short for the shutdown wait, or None. The heartbeat renews every ttl/3,
    so a lease has at least 2/3 of its TTL left at any moment: that must outlast the wait, or a store
    that refuses the renewals during a shutdown lets another worker take over a run still in progress
    here (and pay its stages a second time)."""
    if lease_ttl_s * 2 / 3 >= shutdown_wait_s:
        return None
    return (
        f"the lease TTL ({lease_ttl_s:g} s, ADR_REVIEW_LEASE_TTL_S / --lease-ttl) is too short for the "
        f"shutdown wait ({shutdown_wait_s:g} s, ADR_REVIEW_SHUTDOWN_WAIT_S / --shutdown-wait): it must be "
        f"at least 1.5 x the wait ({shutdown_wait_s * 1.5:g} s), or the wait shorter"
    )


class RunInterrupted(RunAbandoned):
    """The worker is shutting down: the run stops at this stage boundary and is handed back."""


class Executor(Protocol):
    """Executes one claimed run. Raise to fail the attempt; return to complete it."""

    def execute(self, item: QueueItem, ctx: RunContext) -> None: ...


@dataclass
class RunContext:
    item: QueueItem
    owner: str
    store: StateStore
    lease_lost: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)  # the pool is shutting down
    handed_back: bool = False  # recorded as interrupted and its lease freed (once)
    failed_in_stage: bool = False
    reused: list[str] = field(default_factory=list)

    @property
    def run_key(self) -> str:
        return self.item.run_key

    def check(self, *, interruptible: bool = True) -> None:
        """Raise RunAbandoned if the run was cancelled / failed meanwhile or our lease is gone (the
        row says which: a cancelled run's lease is not renewed either); RunInterrupted when the worker
        is shutting down."""
        if interruptible and self.stopping.is_set():
            raise RunInterrupted(f"{self.run_key}: worker shutting down")
        now = self.store.item(self.run_key)
        if now is not None and now.state == "cancelled":
            raise RunAbandoned(f"{self.run_key}: cancelled ({now.cancel_reason or now.error})")
        if now is None or now.state != "running":
            raise RunAbandoned(f"{self.run_key}: state is {now.state if now else 'gone'}")
        if self.lease_lost.is_set() or now.lease_owner != self.owner:
            raise RunAbandoned(f"{self.run_key}: lease lost (now held by {now.lease_owner})")

    def memo(self, salt: str | None = None) -> StageMemo:
        """The run's stage memo; `salt`: a forced run's nonce (fresh model answers)."""
        inner = memo_for(self.store, self.run_key, owner=self.owner, on_reuse=self.reused.append, salt=salt)

        def memo(stage: str, compute: Callable[[], dict[str, Any]], key: str | None = None) -> dict[str, Any]:
            self.check()
            try:
                result = inner(stage, compute, key)
            except (RunAbandoned, InfrastructureError):
                raise  # an outage: the store may not have taken the stage's row, the run records it
            except BaseException:
                self.failed_in_stage = True
                raise
            self.store.progress(self.run_key)
            return result

        return memo


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class WorkerPool:
    """N worker threads, one heartbeat thread and one watchdog thread over a StateStore."""

    def __init__(
        self,
        store: StateStore,
        executor: Executor,
        config: WorkerConfig | None = None,
        *,
        owner_prefix: str | None = None,
    ) -> None:
        self.store = store
        self.executor = executor
        self.config = config or WorkerConfig()
        self.owner_prefix = owner_prefix or default_owner()
        self.wake = threading.Event()
        self._stop = threading.Event()
        self._heartbeat_stop = threading.Event()  # set only once the worker threads have stopped
        self._threads: list[threading.Thread] = []
        self._heartbeat_thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._claiming: set[str] = set()
        self._active: dict[str, RunContext] = {}
        self.completed = 0
        self.failed = 0

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self, workers: int) -> WorkerPool:
        for i in range(workers):
            t = threading.Thread(
                target=self._loop, args=(f"{self.owner_prefix}:w{i}",), name=f"worker-{i}", daemon=True
            )
            t.start()
            self._threads.append(t)
        watchdog = threading.Thread(target=self._watchdog, name="watchdog", daemon=True)
        watchdog.start()
        self._threads.append(watchdog)
        self._heartbeat_thread = threading.Thread(target=self._heartbeat, name="lease-heartbeat", daemon=True)
        self._heartbeat_thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop claiming; runs in progress stop at their next stage boundary. The heartbeat keeps
        their leases until the worker threads have stopped (or `timeout`, default shutdown_wait_s)."""
        self._stop.set()
        self.wake.set()
        with self._lock:
            for ctx in self._active.values():
                ctx.stopping.set()
        wait = self.config.shutdown_wait_s if timeout is None else timeout
        deadline = time.monotonic() + wait
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        with self._lock:
            interrupted = list(self._active.values())
        for ctx in interrupted:  # still mid-stage: record the cut-short attempt, free the run at once
            self._hand_back(ctx)
        self._heartbeat_stop.set()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join(timeout=5.0)

    def _hand_back(self, ctx: RunContext) -> None:
        """An interrupted run: its attempt recorded, its lease freed for the next worker at once."""
        with self._lock:
            if ctx.handed_back:
                return
            ctx.handed_back = True
        try:
            self.store.record_attempt(
                ctx.run_key, "run", None, "failed", error="interrupted: worker shut down", owner=ctx.owner
            )
            self.store.release(ctx.run_key, ctx.owner)
        except Exception:
            log.exception("shutdown_release_error", extra={"run_key": ctx.run_key})

    def notify(self) -> None:
        self.wake.set()

    def alive(self) -> int:
        return sum(1 for t in self._threads if t.is_alive() and t.name.startswith("worker-"))

    def facts(self) -> dict[str, Any]:
        with self._lock:
            active = len(self._active)
        background = [t for t in self._threads if not t.name.startswith("worker-")]
        return {
            "workers_alive": self.alive(),
            "runs_in_progress": active,
            "background_alive": bool(background) and all(t.is_alive() for t in background),
        }

    # -- the loop --------------------------------------------------------------------------------------
    def _loop(self, owner: str) -> None:
        while not self._stop.is_set():
            try:
                worked = self.run_once(owner)
            except Exception:  # never let a worker thread die: log and back off
                log.exception("worker_loop_error", extra={"owner": owner})
                worked = False
            if not worked:
                self.wake.wait(self.config.poll_s)
                self.wake.clear()

    def run_once(self, owner: str) -> bool:
        """Claim and execute at most one due run. True if a run was executed."""
        for item in self.store.due(self.config.batch):
            with self._lock:
                if item.run_key in self._claiming or item.run_key in self._active:
                    continue  # another thread of this process has it
                self._claiming.add(item.run_key)
            try:
                claimed = self.store.claim(item.run_key, owner, self.config.lease_ttl_s)
                if claimed is None:
                    self.store.record_attempt(
                        item.run_key,
                        "run",
                        None,
                        "skipped-locked",
                        error="leased by another worker",
                        owner=owner,
                    )
                    log.info("run_skipped_locked", extra={"run_key": item.run_key, "owner": owner})
                    continue
                ctx = RunContext(claimed, owner, self.store)
                with self._lock:
                    self._active[item.run_key] = ctx
                    if self._stop.is_set():
                        ctx.stopping.set()
            finally:
                with self._lock:
                    self._claiming.discard(item.run_key)
            try:
                self._execute(ctx)
            finally:
                with self._lock:
                    self._active.pop(item.run_key, None)
            return True
        return False

    def _execute(self, ctx: RunContext) -> None:
        item, key = ctx.item, ctx.run_key
        if item.attempts > item.max_attempts:
            err = item.last_error or item.error or "worker died"
            msg = f"gave up after {item.attempts - 1} attempts: {err}"
            self.store.record_attempt(key, "run", None, "failed", error=msg, owner=ctx.owner)
            self.store.finish(key, ctx.owner, "failed", msg)
            self.failed += 1
            return
        started = time.monotonic()
        log.info("run_started", extra={"run_key": key, "attempt": item.attempts, "owner": ctx.owner})
        try:
            self.executor.execute(item, ctx)
            ctx.check(interruptible=False)  # every stage done: complete it, shutting down or not
        except RunInterrupted as exc:
            self._hand_back(ctx)
            log.info("run_interrupted", extra={"run_key": key, "why": str(exc)})
            return
        except RunAbandoned as exc:  # not an error: nothing of it is published or degraded
            event = "run_cancelled" if self.store.state(key) == "cancelled" else "run_abandoned"
            log.info(event, extra={"run_key": key, "why": str(exc)})
            return
        except Exception as exc:
            err = f"{type(exc).__name__}: {exc}"[:2000]
            if not ctx.failed_in_stage:  # a stage failure already has its attempt row
                self.store.record_attempt(
                    key, "run", None, "failed", time.monotonic() - started, error=err, owner=ctx.owner
                )
            if self.store.exhausted(key):
                self.store.finish(key, ctx.owner, "failed", err)
                self.failed += 1
                log.warning("run_failed", extra={"run_key": key, "error": err})
            else:
                delay = self.config.retry_backoff_s * item.attempts
                self.store.retry_later(key, ctx.owner, err, delay)
                log.warning("run_retry", extra={"run_key": key, "error": err, "in_s": delay})
            return
        if self.store.finish(key, ctx.owner, "completed"):
            self.completed += 1
            log.info(
                "run_completed",
                extra={"run_key": key, "s": round(time.monotonic() - started, 3), "reused": ctx.reused},
            )
        else:
            log.info("run_not_completed", extra={"run_key": key, "state": self.store.state(key)})

    # -- background ------------------------------------------------------------------------------------
    def _heartbeat(self) -> None:
        every = max(0.2, self.config.lease_ttl_s / 3)
        while not self._heartbeat_stop.wait(every):
            with self._lock:
                active = list(self._active.values())
            for ctx in active:
                try:
                    if not self.store.renew(ctx.run_key, ctx.owner, self.config.lease_ttl_s):
                        ctx.lease_lost.set()
                except Exception:
                    log.exception("lease_renew_error", extra={"run_key": ctx.run_key})

    def _watchdog(self) -> None:
        every = max(0.2, min(self.config.watchdog_every_s, self.config.stall_after_s / 4))
        while not self._stop.wait(every):
            try:
                for key in self.store.watchdog(self.config.stall_after_s):
                    log.error("run_stalled_by_watchdog", extra={"run_key": key})
            except Exception:
                log.exception("watchdog_error")
