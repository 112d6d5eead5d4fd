"""The worker pool over the state store in-process, with a scripted executor and a controllable clock.
The store's own contract (claim, retry, cancel, watchdog, health) is tests/adapters/test_state_store.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.pipeline.queue import QueueItem, RunSpec
from adr_review.pipeline.server.worker import (
    RunAbandoned,
    RunContext,
    WorkerConfig,
    WorkerPool,
    lease_problem,
)


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["file", "memory"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., SqliteStateStore]]:
    """A file (the App) or `:memory:` (one process): the worker threads share either."""
    opened: list[SqliteStateStore] = []

    def factory(clock: Callable[[], float] = time.time) -> SqliteStateStore:
        where = tmp_path / "q.sqlite3" if request.param == "file" else ":memory:"
        store = SqliteStateStore(where, clock=clock)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def q(open_store: Callable[..., SqliteStateStore], clock: Clock) -> SqliteStateStore:
    return open_store(clock)


def spec(
    key: str = "r1", *, sha: str = "a" * 40, adr: str = "docs/adr/1.md", max_attempts: int = 3
) -> RunSpec:
    return RunSpec(key, "review", "o/r", 7, 1, adr, sha, {}, None, max_attempts)


class Script:
    """Executor whose stages run through the memo; `fail`/`block` per stage for the test at hand."""

    def __init__(self, stages: tuple[str, ...] = ("recall", "judge", "comment")) -> None:
        self.stages = stages
        self.computed: list[tuple[str, str]] = []
        self.fail: dict[str, int] = {}
        self.before: dict[str, Callable[[], object]] = {}
        self.during: dict[str, Callable[[], object]] = {}  # inside the stage's compute (in flight)

    def execute(self, item: QueueItem, ctx: RunContext) -> None:
        memo = ctx.memo()
        for stage in self.stages:
            if stage in self.before:
                self.before.pop(stage)()

            def compute(stage: str = stage) -> dict[str, Any]:
                if self.fail.get(stage, 0) > 0:
                    self.fail[stage] -= 1
                    raise RuntimeError(f"{stage} broke")
                if stage in self.during:
                    self.during.pop(stage)()
                self.computed.append((item.run_key, stage))
                return {"stage": stage}

            memo(stage, compute)


def pool(store: Any, ex: Script, **cfg: Any) -> WorkerPool:
    return WorkerPool(
        store, ex, WorkerConfig(**{"lease_ttl_s": 60, "retry_backoff_s": 0, **cfg}), owner_prefix="t"
    )


def outcomes(q: SqliteStateStore, key: str) -> list[tuple[str, str, bool]]:
    return [(a.stage, a.outcome, a.authoritative) for a in q.attempts(key)]


def test_a_worker_that_loses_the_race_records_skipped_locked(q: SqliteStateStore) -> None:
    q.enqueue([spec()])
    ex = Script()
    [item] = q.due()
    assert q.claim("r1", "someone-else", 60) is not None
    # The pool saw the run as due before the other worker's claim landed (TOCTOU): its CAS fails.
    p = pool(_StaleDue(q, [item]), ex)
    assert p.run_once("t:w0") is False
    assert outcomes(q, "r1") == [("run", "skipped-locked", False)]
    assert ex.computed == []


class _StaleDue:
    def __init__(self, q: SqliteStateStore, items: list[QueueItem]) -> None:
        self._q, self._items = q, items

    def due(self, limit: int = 10) -> list[QueueItem]:
        items, self._items = self._items, []
        return items

    def __getattr__(self, name: str) -> Any:
        return getattr(self._q, name)


def test_completed_run_has_one_authoritative_attempt_per_stage(q: SqliteStateStore) -> None:
    q.enqueue([spec()])
    ex = Script()
    assert pool(q, ex).run_once("t:w0")
    assert q.state("r1") == "completed"
    assert outcomes(q, "r1") == [
        ("recall", "executed", True),
        ("judge", "executed", True),
        ("comment", "executed", True),
    ]


def test_failure_retries_then_resumes_at_the_failed_stage(q: SqliteStateStore) -> None:
    q.enqueue([spec()])
    ex = Script()
    ex.fail["judge"] = 1
    p = pool(q, ex)
    assert p.run_once("t:w0")
    item = q.item("r1")
    assert item is not None and item.state == "queued" and "judge broke" in (item.last_error or "")
    assert p.run_once("t:w0")
    assert q.state("r1") == "completed"
    assert ex.computed == [("r1", "recall"), ("r1", "judge"), ("r1", "comment")]  # recall not recomputed
    assert outcomes(q, "r1") == [
        ("recall", "executed", True),
        ("judge", "failed", False),
        ("recall", "skipped-checkpoint", False),
        ("judge", "executed", True),
        ("comment", "executed", True),
    ]


def test_bounded_attempts_then_failed_with_the_error(q: SqliteStateStore) -> None:
    q.enqueue([spec(max_attempts=2)])
    ex = Script()
    ex.fail["recall"] = 5
    p = pool(q, ex)
    assert p.run_once("t:w0") and p.run_once("t:w0")
    assert not p.run_once("t:w0")
    run = q.get_run("r1")
    assert run is not None and run.state == "failed" and "recall broke" in (run.error or "")
    assert [a.outcome for a in q.attempts("r1")] == ["failed", "failed"]


def test_a_run_whose_workers_keep_dying_is_failed(q: SqliteStateStore, clock: Clock) -> None:
    q.enqueue([spec(max_attempts=2)])
    for owner in ("dead-1", "dead-2"):  # claimed, then the process died: the lease expires
        assert q.claim("r1", owner, 5) is not None
        clock.t += 6
    ex = Script()
    assert pool(q, ex).run_once("t:w0")
    run = q.get_run("r1")
    assert run is not None and run.state == "failed" and "gave up after 2 attempts" in (run.error or "")
    assert ex.computed == []


def test_a_newer_head_stops_a_running_run_at_its_next_stage(q: SqliteStateStore) -> None:
    q.enqueue(
        [spec("old-running"), spec("old-queued", adr="docs/adr/2.md"), spec("other-adr", adr="docs/adr/3.md")]
    )
    q.enqueue([spec("new", sha="b" * 40)])
    ex = Script()

    def supersede() -> None:  # while old-running is between stages
        q.cancel_superseded("o/r", 7, "docs/adr/1.md", "b" * 40, "superseded by bbbb")
        q.cancel_superseded("o/r", 7, "docs/adr/2.md", "b" * 40, "superseded by bbbb")

    ex.before["judge"] = supersede
    p = pool(q, ex)
    claimed = q.claim("old-running", "t:w0", 60)
    assert claimed is not None
    ctx = RunContext(claimed, "t:w0", q)
    with pytest.raises(RunAbandoned):
        ex.execute(ctx.item, ctx)
    assert q.state("old-running") == "cancelled"
    assert q.state("old-queued") == "cancelled"
    assert q.state("other-adr") == "queued" and q.state("new") == "queued"
    assert ("old-running", "comment") not in ex.computed  # never published
    assert not q.finish("old-running", "t:w0", "completed")  # a cancel is not overwritten
    assert p.run_once("t:w0")


def test_pool_threads_drain_the_queue_without_duplicates(open_store: Callable[..., SqliteStateStore]) -> None:
    queue = open_store()
    queue.enqueue([spec(f"r{i}", adr=f"docs/adr/{i}.md") for i in range(30)])
    ex = Script()
    p = pool(queue, ex, poll_s=0.01).start(4)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(i.state != "completed" for i in queue.items()):
        time.sleep(0.05)
    p.stop()
    assert [i.state for i in queue.items()] == ["completed"] * 30
    assert len(ex.computed) == len(set(ex.computed)) == 90


def test_heartbeat_keeps_the_lease_of_a_long_stage(open_store: Callable[..., SqliteStateStore]) -> None:
    queue = open_store()
    queue.enqueue([spec()])
    release = threading.Event()
    ex = Script(stages=("slow",))
    ex.before["slow"] = lambda: release.wait(6.0)
    p = pool(queue, ex, lease_ttl_s=1.5, poll_s=0.02).start(1)
    time.sleep(3.5)  # > 2 lease lengths: only the heartbeat keeps it ours
    item = queue.item("r1")
    assert item is not None and item.state == "running" and item.lease_owner == "t:w0"
    assert queue.claim("r1", "intruder", 1) is None
    release.set()
    deadline = time.monotonic() + 10
    while queue.state("r1") != "completed" and time.monotonic() < deadline:
        time.sleep(0.05)
    p.stop()
    assert queue.state("r1") == "completed"


def test_shutdown_mid_stage_records_and_frees_the_run(open_store: Callable[..., SqliteStateStore]) -> None:
    queue = open_store()
    queue.enqueue([spec()])
    entered, release = threading.Event(), threading.Event()
    ex = Script(stages=("slow",))

    def block() -> None:
        entered.set()
        release.wait(5.0)

    ex.before["slow"] = block
    p = pool(queue, ex, poll_s=0.02).start(1)
    assert entered.wait(5)
    p.stop(timeout=0.3)
    item = queue.item("r1")
    assert item is not None and item.state == "running" and item.lease_owner is None
    assert [(a.stage, a.outcome, a.error) for a in queue.attempts("r1")] == [
        ("run", "failed", "interrupted: worker shut down")
    ]
    assert [i.run_key for i in queue.due()] == ["r1"]  # a restarted worker takes it at once
    release.set()


def test_a_shutdown_keeps_the_lease_until_the_stage_in_flight_ends_then_hands_the_run_back(
    open_store: Callable[..., SqliteStateStore],
) -> None:
    """Issue 26: the heartbeat stopped when the shutdown began, so with a short lease another worker took
    the run over while its stage still ran here (and paid for it again). Now the lease stays ours
    while stop() waits; the stage in flight is checkpointed, and the run is handed back at the next
    stage boundary instead of running on."""
    queue = open_store()
    queue.enqueue([spec()])
    entered, release = threading.Event(), threading.Event()
    ex = Script(stages=("slow", "next"))

    def in_flight() -> None:
        entered.set()
        release.wait(20.0)

    ex.during["slow"] = in_flight
    p = pool(queue, ex, lease_ttl_s=1.5, poll_s=0.02).start(1)
    assert entered.wait(5)
    stopper = threading.Thread(target=p.stop, kwargs={"timeout": 30.0})
    stopper.start()
    time.sleep(3.5)  # > 2 lease lengths into the shutdown: only the heartbeat keeps the run ours
    assert queue.claim("r1", "intruder", 1) is None
    release.set()
    stopper.join(30)
    assert not stopper.is_alive()
    assert ex.computed == [("r1", "slow")]  # "next" is left to the worker that resumes the run
    item = queue.item("r1")
    assert item is not None and item.state == "running" and item.lease_owner is None
    assert [(a.stage, a.outcome, a.error) for a in queue.attempts("r1")] == [
        ("slow", "executed", None),
        ("run", "failed", "interrupted: worker shut down"),
    ]
    assert [i.run_key for i in queue.due()] == ["r1"]  # another worker takes it at once


@pytest.mark.parametrize(
    ("ttl", "wait", "refused"),
    [(300, 10, False), (15, 10, False), (13, 10, True), (4, 2, False), (4, 10, True)],
)
def test_a_lease_too_short_for_the_shutdown_wait_is_refused(ttl: float, wait: float, refused: bool) -> None:
    problem = lease_problem(ttl, wait)
    assert (problem is not None) == refused
    if problem:
        assert "ADR_REVIEW_LEASE_TTL_S" in problem and "ADR_REVIEW_SHUTDOWN_WAIT_S" in problem
