"""The StateStore contract, the same for every implementation: checkpoints, attempts, run records,
deliveries and the App's queue, from one thread, many threads and many processes.

Every test runs once per engine in ENGINES: SQLite (a file, and `:memory:`) and a real PostgreSQL
server the tests start (tests/postgres.py). An entry is a function that opens a store on this test's
database, and the Python source that opens the same database in a child process (None when the
database lives in one process only, like SQLite's `:memory:`).
SQLite specifics (the file, WAL, migrations, legacy files) are in test_state_sqlite.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.core.results import Usage
from adr_review.pipeline.checkpoint import memo_for
from adr_review.pipeline.queue import Delivery, RunSpec
from adr_review.pipeline.state_ports import AttemptInfo, StateStore

REPO = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@dataclass(frozen=True)
class Engine:
    open: Callable[[Callable[[], float]], StateStore]  # a store on this test's database
    child_source: str | None  # Python that binds `store` to the same database in another process


def _sqlite_file(request: pytest.FixtureRequest, tmp: Path) -> Engine:
    path = tmp / "state.sqlite3"
    return Engine(
        open=lambda clock: SqliteStateStore(path, clock=clock),
        child_source=f"from adr_review.adapters.state_sqlite import SqliteStateStore\nstore = SqliteStateStore({str(path)!r})",
    )


def _sqlite_memory(request: pytest.FixtureRequest, tmp: Path) -> Engine:
    return Engine(open=lambda clock: SqliteStateStore(":memory:", clock=clock), child_source=None)


def _postgres(request: pytest.FixtureRequest, tmp: Path) -> Engine:
    """A real PostgreSQL server (tests/postgres.py), a fresh schema per test."""
    from adr_review.adapters.state_postgres import PostgresStateStore

    url = request.getfixturevalue("postgres").new_url()
    return Engine(
        open=lambda clock: PostgresStateStore(url, clock=clock, pool_size=12),
        child_source=f"from adr_review.adapters.state_postgres import PostgresStateStore\nstore = PostgresStateStore({url!r})",
    )


ENGINES: dict[str, Callable[[pytest.FixtureRequest, Path], Engine]] = {
    "sqlite-file": _sqlite_file,
    "sqlite-memory": _sqlite_memory,
    "postgres": _postgres,
}
SHARED = [name for name in ENGINES if name != "sqlite-memory"]  # engines other processes can open

StoreFactory = Callable[..., StateStore]


@pytest.fixture(params=list(ENGINES))
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Opens a store of the engine under test (closed after the test)."""
    engine = ENGINES[request.param](request, tmp_path)
    opened: list[StateStore] = []

    def factory(clock: Callable[[], float] = time.time) -> StateStore:
        store = engine.open(clock)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(store_factory: StoreFactory, clock: Clock) -> StateStore:
    return store_factory(clock)


def spec(
    key: str = "r1",
    *,
    sha: str = "a" * 40,
    adr: str = "docs/adr/1.md",
    kind: str = "review",
    max_attempts: int = 3,
    spec: dict[str, object] | None = None,
) -> RunSpec:
    return RunSpec(key, kind, "o/r", 7, 1, adr, sha, spec or {}, None, max_attempts)


def delivery(guid: str = "g1", hook: str = "1", payload: str = "{}") -> Delivery:
    return Delivery(hook, guid, "pull_request", "opened", 1, "o/r", "0" * 64, payload)


# --- checkpoints and attempts --------------------------------------------------------------------------


def test_first_put_wins_and_is_authoritative(store: StateStore) -> None:
    usage = Usage(model="m", input_tokens=10, output_tokens=5, cost_usd=0.01, calls=1)
    assert store.get("rk", "recall") is None
    assert store.put("rk", "recall", None, {"answer": [1, 2], "ja": "決定"}, AttemptInfo(1.5, usage, "w1"))
    assert store.put("rk", "recall", None, {"answer": "late"}, AttemptInfo(2.0, usage, "w2")) is False
    assert store.get("rk", "recall") == {"answer": [1, 2], "ja": "決定"}
    rows = store.attempts("rk")
    assert [(a.stage, a.attempt, a.outcome, a.authoritative, a.owner) for a in rows] == [
        ("recall", 1, "executed", True, "w1"),
        ("recall", 2, "executed", False, "w2"),
    ]
    assert rows[0].usage == usage and rows[0].duration_s == 1.5


def test_sequence_numbers_follow_completion_order(store: StateStore) -> None:
    for stage in ("recall", "critic:premortem", "critic:devils_advocate", "judge"):
        store.put("rk", stage, None, {"s": stage}, AttemptInfo())
    store.put("other", "recall", None, {}, AttemptInfo())
    assert store.checkpoints("rk") == [
        (1, "recall"),
        (2, "critic:premortem"),
        (3, "critic:devils_advocate"),
        (4, "judge"),
    ]
    assert store.checkpoints("other") == [(1, "recall")]


def test_attempt_numbers_count_per_stage(store: StateStore) -> None:
    store.record_attempt("rk", "judge", None, "failed", 0.3, None, "timeout")
    store.record_attempt("rk", "recall", None, "skipped-checkpoint")
    store.put("rk", "judge", None, {}, AttemptInfo(0.1))
    assert [(a.stage, a.attempt, a.outcome, a.error) for a in store.attempts("rk")] == [
        ("judge", 1, "failed", "timeout"),
        ("recall", 1, "skipped-checkpoint", None),
        ("judge", 2, "executed", None),
    ]


def test_unknown_outcome_and_state_are_refused(store: StateStore) -> None:
    with pytest.raises(ValueError):
        store.record_attempt("rk", "judge", None, "done")
    with pytest.raises(ValueError):
        store.set_state("rk", "finished")
    store.enqueue([spec()])
    assert store.claim("r1", "A", 60) is not None
    with pytest.raises(ValueError):
        store.finish("r1", "A", "queued")  # finish ends a run: terminal states only
    assert store.state("r1") == "running"


def test_memo_records_executed_skipped_and_failed(store: StateStore) -> None:
    calls: list[str] = []
    reused: list[str] = []
    memo = memo_for(store, "rk", owner="me", on_reuse=reused.append)

    def compute() -> dict[str, object]:
        calls.append("x")
        return {"answer": 1, "usage": {"model": "m", "input_tokens": 7, "output_tokens": 3, "cost_usd": 0.5}}

    class Boom(Exception):
        usage = Usage(model="m", input_tokens=2, calls=1)

    def fails() -> dict[str, object]:
        raise Boom("overloaded")

    assert memo("recall", compute)["answer"] == 1
    assert memo("recall", compute)["answer"] == 1
    with pytest.raises(Boom):
        memo("judge", fails)
    assert calls == ["x"] and reused == ["recall"]
    rows = store.attempts("rk")
    assert [(a.stage, a.outcome, a.authoritative) for a in rows] == [
        ("recall", "executed", True),
        ("recall", "skipped-checkpoint", False),
        ("judge", "failed", False),
    ]
    assert (rows[0].usage.input_tokens, rows[0].usage.output_tokens, rows[0].usage.cost_usd) == (7, 3, 0.5)
    assert rows[2].usage.input_tokens == 2 and rows[2].error == "Boom: overloaded"
    assert store.get("rk", "judge") is None


def test_memo_returns_the_winner_when_another_worker_stored_first(store: StateStore) -> None:
    memo = memo_for(store, "rk")

    def compute() -> dict[str, object]:
        # Another worker finishes the same stage while this one computes.
        store.put("rk", "judge", None, {"by": "other"}, AttemptInfo())
        return {"by": "me"}

    assert memo("judge", compute) == {"by": "other"}
    assert [a.authoritative for a in store.attempts("rk")] == [True, False]


def test_concurrent_puts_from_threads_have_one_authoritative_winner(store: StateStore) -> None:
    barrier = threading.Barrier(8)
    wins: list[bool] = []

    def worker(i: int) -> None:
        barrier.wait()
        wins.append(store.put("rk", "judge", None, {"i": i}, AttemptInfo(owner=f"t{i}")))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == [False] * 7 + [True]  # one database for every thread
    rows = store.attempts("rk")
    assert sorted(a.attempt for a in rows) == list(range(1, 9))
    winner = next(a for a in rows if a.authoritative)
    assert store.get("rk", "judge") == {"i": int(winner.owner[1:])}  # type: ignore[index]


def test_concurrent_memos_of_one_run_like_the_critics(store: StateStore) -> None:
    memo = memo_for(store, "rk")
    stages = [f"critic:{i}" for i in range(6)]
    barrier = threading.Barrier(len(stages))

    def critic(stage: str) -> None:
        barrier.wait()
        memo(stage, lambda: {"stage": stage})

    threads = [threading.Thread(target=critic, args=(s,)) for s in stages]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(stage for _, stage in store.checkpoints("rk")) == stages
    assert sorted(seq for seq, _ in store.checkpoints("rk")) == list(range(1, 7))
    assert all(store.get("rk", s) == {"stage": s} for s in stages)


# --- run records -----------------------------------------------------------------------------------------


def test_ensure_run_keeps_the_first_meta(store: StateStore) -> None:
    first = store.ensure_run("rk", {"pr": 1})
    again = store.ensure_run("rk", {"pr": 2})
    assert first.state == again.state == "queued"
    assert again.meta == {"pr": 1}
    assert store.get_run("nope") is None


def test_set_state_from_any_state_and_terminal_states_end_the_lease(store: StateStore, clock: Clock) -> None:
    store.set_state("inline", "running")  # the Action's inline run: no queue row, no lease
    run = store.get_run("inline")
    assert run is not None and (run.state, run.finished_at) == ("running", None)
    store.set_state("inline", "failed", "boom")
    store.set_state("inline", "completed")  # from any state, error cleared
    run = store.get_run("inline")
    assert run is not None and (run.state, run.error, run.finished_at) == ("completed", None, clock.t)

    store.enqueue([spec()])
    assert store.claim("r1", "A", 60) is not None
    clock.t += 5
    store.set_state("r1", "completed")
    run = store.get_run("r1")
    assert run is not None
    assert (run.state, run.lease_owner, run.finished_at) == ("completed", None, clock.t)
    assert store.claim("r1", "B", 60) is None  # terminal: nobody claims it
    assert store.due() == []


# --- deliveries and enqueueing ---------------------------------------------------------------------------


def test_delivery_and_runs_are_one_transaction_and_idempotent(store: StateStore) -> None:
    first = store.accept_delivery(delivery(), [spec(), spec("p1", kind="plan", adr="")])
    again = store.accept_delivery(delivery(), [spec("other")])
    assert (first.stored, first.new_runs, first.run_keys) == (True, 2, ("r1", "p1"))
    assert (again.stored, again.new_runs, again.run_keys) == (False, 0, ("r1", "p1"))  # the first's runs
    assert store.delivery_count() == 1
    assert sorted((i.run_key, i.state, i.delivery_id) for i in store.items()) == [
        ("p1", "queued", "g1"),
        ("r1", "queued", "g1"),
    ]
    run = store.get_run("r1")
    assert run is not None and run.meta == {
        "kind": "review",
        "repo": "o/r",
        "pr": 7,
        "adr_path": "docs/adr/1.md",
        "head_sha": "a" * 40,
    }
    # the same guid under another hook id is another delivery; the runs it names already exist
    other_hook = store.accept_delivery(delivery(hook="2"), [spec()])
    assert (other_hook.stored, other_hook.new_runs) == (True, 0)


@pytest.mark.parametrize("failing_step", ["_enqueue", "_note_head"])
def test_a_failure_after_the_delivery_row_keeps_nothing_so_the_redelivery_is_new(
    store: StateStore, monkeypatch: pytest.MonkeyPatch, failing_step: str
) -> None:
    """The delivery row is the dedupe key: were it committed without its runs, GitHub's redelivery
    would be taken for a duplicate and the review lost."""
    runs = [spec(), spec("p1", kind="plan", adr="")]

    def fail(*args: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, failing_step, fail)  # between the delivery row and the rest
    with pytest.raises(RuntimeError, match="disk full"):
        store.accept_delivery(delivery(), runs)
    monkeypatch.undo()
    assert (store.delivery_count(), store.items(), store.get_run("r1")) == (0, [], None)
    retry = store.accept_delivery(delivery(), runs)
    assert (retry.stored, retry.new_runs) == (True, 2)


def test_stored_guids_and_delivery_payloads(store: StateStore) -> None:
    guids = [f"g{i}" for i in range(1200)]  # more than one chunk of bound parameters
    for g in guids[::100]:
        store.accept_delivery(delivery(g, payload=f'{{"g": "{g}"}}'), [])
    store.accept_delivery(delivery("g7", hook="2"), [])
    assert store.stored_guids(guids) == set(guids[::100]) | {"g7"}
    assert store.stored_guids([]) == set()
    assert store.delivery_payload("1", "g100") == '{"g": "g100"}'
    assert store.delivery_payload("1", "g7") is None and store.delivery_payload(None, None) is None


def test_enqueue_is_idempotent_on_the_run_key(store: StateStore, clock: Clock) -> None:
    assert store.enqueue([spec(spec={"nonce": "first"})]) == 1
    clock.t += 10
    assert store.enqueue([spec(spec={"nonce": "second"}), spec("r2")]) == 1
    item = store.item("r1")
    assert item is not None and item.spec == {"nonce": "first"} and item.enqueued_at == 1_000_000.0
    assert [i.run_key for i in store.items()] == ["r1", "r2"]
    assert store.item("nope") is None and store.state("nope") is None


def test_due_offers_plans_first_then_oldest(store: StateStore, clock: Clock) -> None:
    store.enqueue([spec("review-old")])
    clock.t += 1
    store.enqueue([spec("plan-new", kind="plan", adr="")])
    clock.t += 1
    store.enqueue([spec("review-new", adr="docs/adr/2.md")])
    assert [i.run_key for i in store.due()] == ["plan-new", "review-old", "review-new"]
    assert [i.run_key for i in store.due(limit=1)] == ["plan-new"]


# --- the claim ---------------------------------------------------------------------------------------------


def test_claim_is_compare_and_set_with_an_attempt_counter(store: StateStore, clock: Clock) -> None:
    store.enqueue([spec()])
    first = store.claim("r1", "A", 10)
    assert first is not None and (first.state, first.lease_owner, first.attempts) == ("running", "A", 1)
    assert first.lease_expires_at == clock.t + 10
    assert store.claim("r1", "B", 10) is None
    assert store.due() == []  # leased: not offered
    clock.t += 11
    assert [i.run_key for i in store.due()] == ["r1"]  # expired: offered again
    reclaimed = store.claim("r1", "B", 10)
    assert reclaimed is not None and reclaimed.lease_owner == "B" and reclaimed.attempts == 2


def test_a_reclaimed_lease_records_the_attempt_that_died(store: StateStore, clock: Clock) -> None:
    store.enqueue([spec()])
    store.claim("r1", "dead", 5)
    clock.t += 6
    assert store.claim("r1", "alive", 5) is not None
    [row] = store.attempts("r1")
    assert (row.stage, row.outcome, row.owner, row.authoritative) == ("run", "failed", "alive", False)
    assert row.error is not None and row.error.startswith("lease_expired: attempt 1 by dead")


def test_only_queued_runs_can_be_claimed(store: StateStore) -> None:
    assert store.claim("nope", "A", 60) is None
    store.ensure_run("inline", {})  # a run record without a queue row (the Action's)
    assert store.claim("inline", "A", 60) is None
    run = store.get_run("inline")
    assert run is not None and (run.state, run.lease_owner) == ("queued", None)


def test_renew_and_release_the_lease(store: StateStore, clock: Clock) -> None:
    store.enqueue([spec()])
    assert store.claim("r1", "a", 60) is not None
    clock.t += 30
    assert store.renew("r1", "a", 60)
    clock.t += 59
    assert store.claim("r1", "b", 60) is None  # renewed: still held
    clock.t += 2
    assert store.claim("r1", "b", 60) is not None  # expired: taken over
    assert not store.renew("r1", "a", 60)
    store.release("r1", "a")  # not a's any more: no effect
    assert store.get_run("r1").lease_owner == "b"  # type: ignore[union-attr]
    store.release("r1", "b")
    assert store.state("r1") == "running" and store.get_run("r1").lease_owner is None  # type: ignore[union-attr]
    assert [i.run_key for i in store.due()] == ["r1"]  # released: offered at once
    assert store.claim("r1", "c", 60) is not None
    store.set_state("r1", "completed")
    assert not store.renew("r1", "c", 60)  # a finished run has no lease to renew


# --- settling a run -----------------------------------------------------------------------------------------


def test_finish_only_by_the_holder_of_a_running_run(store: StateStore, clock: Clock) -> None:
    store.enqueue([spec()])
    assert not store.finish("r1", "A", "completed")  # queued, not claimed
    store.claim("r1", "A", 60)
    assert not store.finish("r1", "B", "completed")
    clock.t += 3
    assert store.finish("r1", "A", "failed", "judge broke")
    item = store.item("r1")
    assert item is not None and (item.state, item.error, item.lease_owner) == ("failed", "judge broke", None)
    assert item.last_error == "judge broke"
    assert store.get_run("r1").finished_at == clock.t  # type: ignore[union-attr]
    assert not store.finish("r1", "A", "completed")  # already terminal


def test_retry_later_gives_the_run_back_with_back_off(store: StateStore, clock: Clock) -> None:
    store.enqueue([spec()])
    store.claim("r1", "A", 60)
    assert not store.retry_later("r1", "B", "not yours", 30)
    assert store.retry_later("r1", "A", "RuntimeError: judge broke", 30)
    item = store.item("r1")
    assert item is not None and (item.state, item.lease_owner) == ("queued", None)
    assert item.last_error == item.error == "RuntimeError: judge broke"
    assert store.due() == []  # backing off
    clock.t += 30
    assert [i.run_key for i in store.due()] == ["r1"]
    again = store.claim("r1", "B", 60)
    assert again is not None and again.attempts == 2
    assert store.attempts("r1") == []  # a retry is not a dead worker: no lease_expired row


def test_exhausted_counts_every_claim(store: StateStore, clock: Clock) -> None:
    store.enqueue([spec(max_attempts=2)])
    assert not store.exhausted("r1")
    store.claim("r1", "A", 5)
    assert not store.exhausted("r1")
    clock.t += 6  # A died
    store.claim("r1", "B", 5)
    assert store.exhausted("r1")
    assert not store.exhausted("nope")


def test_a_newer_head_cancels_queued_and_running_runs_of_the_same_adr(store: StateStore) -> None:
    store.enqueue(
        [
            spec("old-running"),
            spec("old-queued", adr="docs/adr/2.md"),
            spec("other-adr", adr="docs/adr/3.md"),
            spec("old-done", adr="docs/adr/2.md"),
            spec("no-head", sha="", adr="docs/adr/2.md"),
            spec("new", sha="b" * 40),
        ]
    )
    store.claim("old-running", "A", 60)
    store.claim("old-done", "A", 60)
    store.finish("old-done", "A", "completed")
    why = "superseded by bbbb"
    assert store.cancel_superseded("o/r", 7, "docs/adr/1.md", "b" * 40, why) == ["old-running"]
    assert store.cancel_superseded("o/r", 7, "docs/adr/2.md", "b" * 40, why) == ["old-queued"]
    assert store.cancel_superseded("o/r", 8, None, "b" * 40, "another PR") == []
    states = {i.run_key: (i.state, i.cancel_reason) for i in store.items()}
    assert states == {
        "old-running": ("cancelled", "superseded by bbbb"),
        "old-queued": ("cancelled", "superseded by bbbb"),
        "other-adr": ("queued", None),
        "old-done": ("completed", None),
        "no-head": ("queued", None),
        "new": ("queued", None),
    }
    assert not store.finish("old-running", "A", "completed")  # a cancel is not overwritten
    assert store.cancel_superseded("o/r", 7, None, "b" * 40, "all ADRs") == ["other-adr"]


def test_cancel_one_run(store: StateStore) -> None:
    store.enqueue([spec()])
    assert store.cancel("r1", "rekeyed as r2")
    item = store.item("r1")
    assert item is not None and (item.state, item.cancel_reason, item.error) == (
        "cancelled",
        "rekeyed as r2",
        "rekeyed as r2",
    )
    assert not store.cancel("r1", "again")  # terminal already
    assert store.item("r1").cancel_reason == "rekeyed as r2"  # type: ignore[union-attr]


def test_watchdog_fails_a_hung_run_and_flags_it(store: StateStore, clock: Clock) -> None:
    store.enqueue([spec("hung"), spec("waiting", adr="docs/adr/2.md")])
    assert store.claim("hung", "A", 10_000) is not None  # a live lease, renewed by a heartbeat
    clock.t += 3601
    assert store.renew("hung", "A", 10_000)  # lease renewals are not progress
    assert store.watchdog(3600) == ["hung"]
    item = store.item("hung")
    assert item is not None and item.state == "failed" and item.stalled_by_watchdog
    assert (item.error or "").startswith("stalled_by_watchdog") and item.last_error == item.error
    assert item.lease_owner is None
    assert store.state("waiting") == "queued"  # waiting in the backlog is not a stall
    assert store.watchdog(3600) == []
    assert not store.finish("hung", "A", "completed")  # the watchdog's verdict stands


def test_stage_progress_resets_the_watchdog(store: StateStore, clock: Clock) -> None:
    store.enqueue([spec()])
    store.claim("r1", "A", 10_000)
    clock.t += 3000
    store.progress("r1")
    clock.t += 3000
    assert store.watchdog(3600) == []
    clock.t += 601
    assert store.watchdog(3600) == ["r1"]


def test_health_counts_depth_and_age(store: StateStore, clock: Clock) -> None:
    assert store.health() == {
        "store_ok": True,
        "queue_depth": 0,
        "running": 0,
        "oldest_queued_age_s": None,
    }
    store.enqueue([spec("a"), spec("b", adr="x.md")])
    clock.t += 12
    store.claim("a", "A", 60)
    h = store.health()
    assert h == {"store_ok": True, "queue_depth": 1, "running": 1, "oldest_queued_age_s": 12.0}


# --- several processes on one database ----------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys, time
    from adr_review.pipeline.state_ports import AttemptInfo
    {open}
    me, start = sys.argv[1], float(sys.argv[2])
    while time.time() < start:
        time.sleep(0.001)
    won = store.put("rk", "judge", None, {{"by": me}}, AttemptInfo(owner=me))
    claimed = store.claim("lease", me, 60)
    print(int(won), int(claimed is not None))
    """
)


@pytest.mark.real_process
@pytest.mark.parametrize("engine", SHARED)
def test_one_authoritative_writer_and_one_claimer_across_processes(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    shared = ENGINES[engine](request, tmp_path)
    assert shared.child_source is not None
    store = shared.open(time.time)
    store.enqueue([spec("lease")])
    script = CHILD.format(open=shared.child_source)
    start = str(time.time() + 1.5)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, f"p{i}", start],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append(tuple(int(x) for x in out.split()))
    assert sorted(w for w, _ in outs) == [0, 0, 1]
    assert sorted(c for _, c in outs) == [0, 0, 1]
    rows = store.attempts("rk")
    assert len(rows) == 3 and sum(a.authoritative for a in rows) == 1
    winner = next(a for a in rows if a.authoritative)
    assert store.get("rk", "judge") == {"by": winner.owner}
    item = store.item("lease")
    assert item is not None and item.attempts == 1 and item.lease_owner in {"p0", "p1", "p2"}
    store.close()


# --- push order: a newer head is never superseded by an older one (issue 16) --------------------------------


def pr_delivery(guid: str, head: str, pr: int = 7) -> tuple[Delivery, list[RunSpec]]:
    plan = RunSpec(f"plan:o/r#{pr}@{head}:ready", "plan", "o/r", pr, 1, "", head, {}, None, 3)
    return delivery(guid), [plan]


def test_deliveries_record_the_order_in_which_heads_arrived(store: StateStore) -> None:
    a, b = "a" * 40, "b" * 40
    store.accept_delivery(*pr_delivery("g1", a))
    store.accept_delivery(*pr_delivery("g2", b))
    assert store.push_order("o/r", 7, a) < store.push_order("o/r", 7, b)
    store.accept_delivery(*pr_delivery("g1", a))  # a redelivery of the first push: no new arrival
    assert store.push_order("o/r", 7, a) < store.push_order("o/r", 7, b)
    store.accept_delivery(*pr_delivery("g3", a))  # a new delivery of head a (a force-push back)
    assert store.push_order("o/r", 7, a) > store.push_order("o/r", 7, b)
    unseen = store.push_order("o/r", 7, "c" * 40)  # a head no delivery named: the next number, once
    assert unseen > store.push_order("o/r", 7, a) and store.push_order("o/r", 7, "c" * 40) == unseen


def test_superseding_cancels_older_heads_only(store: StateStore) -> None:
    """The race of issue 16: a plan resumed after a crash cancelled the runs of a *newer* head."""
    old, mid, new = "a" * 40, "b" * 40, "c" * 40
    for i, head in enumerate((old, mid, new)):
        store.accept_delivery(*pr_delivery(f"g{i}", head))
    store.enqueue([spec("r-old", sha=old), spec("r-mid", sha=mid), spec("r-new", sha=new)])
    assert store.cancel_superseded("o/r", 7, "docs/adr/1.md", mid, "superseded by bbbb") == ["r-old"]
    assert store.cancel_superseded("o/r", 7, None, mid, "superseded by bbbb") == [f"plan:o/r#7@{old}:ready"]
    assert store.state("r-new") == "queued" and store.state(f"plan:o/r#7@{new}:ready") == "queued"
    assert store.cancel_superseded("o/r", 7, "docs/adr/1.md", new, "superseded by cccc") == ["r-mid"]


# --- named locks ---------------------------------------------------------------------------------------------


def test_a_lock_has_one_holder_until_released_or_expired(store: StateStore, clock: Clock) -> None:
    assert store.try_lock("comment:o/r#7:a.md", "A", 30)
    assert not store.try_lock("comment:o/r#7:a.md", "B", 30)
    assert store.try_lock("comment:o/r#7:b.md", "B", 30)  # another name, another lock
    clock.t += 20
    assert store.try_lock("comment:o/r#7:a.md", "A", 30)  # ours: renewed
    clock.t += 20
    assert not store.try_lock("comment:o/r#7:a.md", "B", 30)  # still held (renewed 20 s ago)
    store.unlock("comment:o/r#7:a.md", "B")  # not B's: no effect
    assert not store.try_lock("comment:o/r#7:a.md", "B", 30)
    store.unlock("comment:o/r#7:a.md", "A")
    assert store.try_lock("comment:o/r#7:a.md", "B", 30)
    clock.t += 31  # B died holding it: the lease runs out
    assert store.try_lock("comment:o/r#7:a.md", "C", 30)


def test_threads_racing_for_a_lock_have_one_winner(store: StateStore) -> None:
    barrier = threading.Barrier(8)
    won: list[str] = []

    def contender(i: int) -> None:
        barrier.wait()
        if store.try_lock("index:ix-1", f"t{i}", 60):
            won.append(f"t{i}")

    threads = [threading.Thread(target=contender, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
