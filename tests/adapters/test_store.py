"""CheckpointStore semantics, the same for MemoryStore and SqliteStore; SQLite specifics at the end."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.adapters.store import SCHEMA_VERSION, MemoryStore, SqliteStore, StoreError
from app.core.results import Usage
from app.pipeline.checkpoint import memo_for
from app.pipeline.ports import AttemptInfo, CheckpointStore

REPO = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self, t: float = 1_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


StoreFactory = Callable[[Clock], CheckpointStore]


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    opened: list[SqliteStore] = []

    def factory(clock: Clock) -> CheckpointStore:
        if request.param == "memory":
            return MemoryStore(clock=clock)
        s = SqliteStore(tmp_path / "runs.sqlite", clock=clock)
        opened.append(s)
        return s

    yield factory
    for s in opened:
        s.close()


def test_first_put_wins_and_is_authoritative(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    usage = Usage(model="m", input_tokens=10, output_tokens=5, cost_usd=0.01, calls=1)
    assert store.get("rk", "recall") is None
    assert store.put("rk", "recall", None, {"answer": [1, 2]}, AttemptInfo(1.5, usage, "w1")) is True
    assert store.put("rk", "recall", None, {"answer": "late"}, AttemptInfo(2.0, usage, "w2")) is False
    assert store.get("rk", "recall") == {"answer": [1, 2]}
    rows = store.attempts("rk")
    assert [(a.stage, a.attempt, a.outcome, a.authoritative, a.owner) for a in rows] == [
        ("recall", 1, "executed", True, "w1"),
        ("recall", 2, "executed", False, "w2"),
    ]
    assert rows[0].usage == usage and rows[0].duration_s == 1.5


def test_sequence_numbers_follow_completion_order(make_store: StoreFactory) -> None:
    store = make_store(Clock())
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


def test_attempt_numbers_count_per_stage(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    store.record_attempt("rk", "judge", None, "failed", 0.3, None, "timeout")
    store.record_attempt("rk", "recall", None, "skipped-checkpoint")
    store.put("rk", "judge", None, {}, AttemptInfo(0.1))
    assert [(a.stage, a.attempt, a.outcome, a.error) for a in store.attempts("rk")] == [
        ("judge", 1, "failed", "timeout"),
        ("recall", 1, "skipped-checkpoint", None),
        ("judge", 2, "executed", None),
    ]


def test_unknown_outcome_and_state_are_refused(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    with pytest.raises(ValueError):
        store.record_attempt("rk", "judge", None, "done")
    with pytest.raises(ValueError):
        store.set_state("rk", "finished")


def test_ensure_run_keeps_the_first_meta(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    first = store.ensure_run("rk", {"pr": 1})
    again = store.ensure_run("rk", {"pr": 2})
    assert first.state == again.state == "queued"
    assert again.meta == {"pr": 1}


def test_lease_is_compare_and_set_with_expiry(make_store: StoreFactory) -> None:
    clock = Clock()
    store = make_store(clock)
    store.ensure_run("rk", {})
    assert store.claim("rk", "a", ttl_s=60)
    assert store.claim("rk", "a", ttl_s=60)  # re-entrant for the holder
    assert not store.claim("rk", "b", ttl_s=60)
    run = store.get_run("rk")
    assert run is not None and run.state == "running" and run.lease_owner == "a"
    clock.t += 30
    assert store.renew("rk", "a", ttl_s=60)
    clock.t += 59
    assert not store.claim("rk", "b", ttl_s=60)  # renewed: still held
    clock.t += 2
    assert store.claim("rk", "b", ttl_s=60)  # expired: taken over
    assert not store.renew("rk", "a", ttl_s=60)
    store.release("rk", "a")  # not a's any more: no effect
    assert store.get_run("rk").lease_owner == "b"  # type: ignore[union-attr]
    store.release("rk", "b")
    assert store.claim("rk", "c", ttl_s=60)


def test_terminal_states_end_the_lease_and_refuse_claims(make_store: StoreFactory) -> None:
    clock = Clock()
    store = make_store(clock)
    assert store.claim("rk", "a", ttl_s=60)
    clock.t += 5
    store.set_state("rk", "completed")
    run = store.get_run("rk")
    assert run is not None
    assert (run.state, run.lease_owner, run.finished_at) == ("completed", None, clock.t)
    assert not store.claim("rk", "b", ttl_s=60)


def test_watchdog_marks_runs_without_progress_stalled(make_store: StoreFactory) -> None:
    clock = Clock()
    store = make_store(clock)
    store.ensure_run("old", {})
    store.ensure_run("busy", {})
    store.ensure_run("done", {})
    store.set_state("done", "completed")
    clock.t += 3000
    store.record_attempt("busy", "recall", None, "skipped-checkpoint")  # progress
    clock.t += 1000
    assert store.mark_stalled(3600) == ["old"]
    assert store.get_run("old").state == "stalled"  # type: ignore[union-attr]
    assert store.get_run("busy").state == "queued"  # type: ignore[union-attr]


def test_memo_records_executed_skipped_and_failed(make_store: StoreFactory) -> None:
    store = make_store(Clock())
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


def test_memo_returns_the_winner_when_another_worker_stored_first(make_store: StoreFactory) -> None:
    store = make_store(Clock())
    memo = memo_for(store, "rk")

    def compute() -> dict[str, object]:
        # Another worker finishes the same stage while this one computes.
        store.put("rk", "judge", None, {"by": "other"}, AttemptInfo())
        return {"by": "me"}

    assert memo("judge", compute) == {"by": "other"}
    assert [a.authoritative for a in store.attempts("rk")] == [True, False]


def test_concurrent_puts_have_one_authoritative_winner(make_store: StoreFactory) -> None:
    store = make_store(Clock())
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
    assert sorted(wins) == [False] * 7 + [True]
    rows = store.attempts("rk")
    assert sorted(a.attempt for a in rows) == list(range(1, 9))
    winner = next(a for a in rows if a.authoritative)
    assert store.get("rk", "judge") == {"i": int(winner.owner[1:])}  # type: ignore[index]


# --- SQLite specifics ------------------------------------------------------------------------------


def test_sqlite_is_wal_versioned_and_durable(tmp_path: Path) -> None:
    path = tmp_path / "a" / "runs.sqlite"
    with SqliteStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        store.put("rk", "recall", None, {"x": "決定"}, AttemptInfo(0.2))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "checkpoints", "attempts"} <= tables
    cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    assert {"lease_owner", "lease_expires_at", "state", "finished_at"} <= cols
    assert "authoritative" in {r[1] for r in conn.execute("PRAGMA table_info(attempts)")}
    conn.close()
    with SqliteStore(path) as again:
        assert again.get("rk", "recall") == {"x": "決定"}


def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SqliteStore(path)


def test_sqlite_one_authoritative_writer_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    SqliteStore(path).close()
    script = textwrap.dedent(
        """
        import sys, time
        from app.adapters.store import SqliteStore
        from app.pipeline.ports import AttemptInfo
        store = SqliteStore(sys.argv[1])
        start = float(sys.argv[3])
        while time.time() < start:
            time.sleep(0.001)
        won = store.put("rk", "judge", None, {"by": sys.argv[2]}, AttemptInfo(owner=sys.argv[2]))
        claimed = store.claim("lease", sys.argv[2], 60)
        print(int(won), int(claimed))
        """
    )
    import time

    start = str(time.time() + 1.5)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), f"p{i}", start],
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
    with SqliteStore(path) as store:
        rows = store.attempts("rk")
        assert len(rows) == 3 and sum(a.authoritative for a in rows) == 1
        winner = next(a for a in rows if a.authoritative)
        assert store.get("rk", "judge") == {"by": winner.owner}
