"""ADR-0116's kill matrix with real processes: `adr-review serve` is SIGKILLed at a controlled point
(installed around the real entrypoint by tests/server/killable_serve.py), restarted on the same store
(a SQLite file, and a real PostgreSQL server: every row runs on both engines), and must end with every
run completed and

- no duplicate LLM call (the fake Anthropic process counts calls per prompt across the restart),
- no duplicate comment (the fake GitHub process counts comment creations),
- every attempt and skip recorded (the exact multiset of (stage, outcome) rows per run),
- exactly one authoritative attempt per checkpointed stage.

One informational row shows the bound the ADR accepts when a kill lands after the model answered but
before the checkpoint: that one stage is paid twice, nothing else.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.server.harness import ADR_PATH, PR, REPO, Stack, post_webhook, pr_payload

pytestmark = pytest.mark.real_process  # every test here runs `adr-review serve` processes

CRITICS = ("critic:devils_advocate", "critic:premortem")
REVIEW_STAGES = ("recall", *CRITICS, "judge", "render", "comment")
PROMPTS = ("recall-pre-gate", "blindspot-devils-advocate", "blindspot-premortem", "blindspot-judge")

E, S, F, L = "executed", "skipped-checkpoint", "failed", "skipped-locked"
LEASE_LOST = ("run", F)  # the restarted worker records the killed attempt when it takes the expired lease


def rows(*pairs: tuple[str, str]) -> Counter[tuple[str, str]]:
    return Counter(pairs)


def killed_after(stored: int) -> Counter[tuple[str, str]]:
    """Review-run rows when the first `stored` stages were checkpointed before the kill: executed by the
    first process, the killed attempt, those stages reused by the second, the rest executed by it."""
    done, rest = REVIEW_STAGES[:stored], REVIEW_STAGES[stored:]
    return rows(*((st, E) for st in done), LEASE_LOST, *((st, S) for st in done), *((st, E) for st in rest))


ALL_EXECUTED = rows(*((st, E) for st in REVIEW_STAGES))
PLAN_ONCE = rows(("plan", E))

# (id, kill point, review-run attempt rows, plan-run attempt rows, LLM calls differing from 1, comment edits)
MATRIX = [
    ("1 in a stage, before its checkpoint", "judge:start:review", killed_after(3), PLAN_ONCE, {}, 0),
    ("2 after a checkpoint, before the next stage", "recall:after:review", killed_after(1), PLAN_ONCE, {}, 0),
    ("2 after a checkpoint, mid-pipeline", "judge:after:review", killed_after(4), PLAN_ONCE, {}, 0),
    (
        "2b plan checkpointed, reviews not yet enqueued",
        "plan:after:plan",
        ALL_EXECUTED,
        rows(("plan", E), LEASE_LOST, ("plan", S)),
        {},
        0,
    ),
    # The re-run finds the posted comment by its marker, already carrying this run key: nothing is
    # recomputed or edited, and the comment stage records that it was satisfied.
    (
        "3a comment posted, not yet checkpointed",
        "comment:during:review",
        rows(*((st, E) for st in REVIEW_STAGES[:5]), LEASE_LOST, ("comment", E)),
        PLAN_ONCE,
        {},
        0,
    ),
    (
        "3b comment checkpointed, run not marked complete",
        "run:complete:review",
        ALL_EXECUTED + rows(LEASE_LOST, ("comment", S)),
        PLAN_ONCE,
        {},
        0,
    ),
    (
        "x model answered, not yet checkpointed (informational: at most one stage re-paid)",
        "judge:during:review",
        killed_after(3),
        PLAN_ONCE,
        {"blindspot-judge": 2},
        0,
    ),
]


def attempt_rows(stack: Stack, kind: str) -> dict[str, Counter[tuple[str, str]]]:
    out: dict[str, Counter[tuple[str, str]]] = {}
    for r in stack.query(
        "SELECT a.run_key, a.stage, a.outcome FROM attempts a JOIN queue q USING (run_key) WHERE q.kind = ?",
        (kind,),
    ):
        out.setdefault(r["run_key"], Counter())[(r["stage"], r["outcome"])] += 1
    return out


def assert_one_authoritative_per_stage(stack: Stack) -> None:
    checkpointed = {(r["run_key"], r["stage"]) for r in stack.query("SELECT run_key, stage FROM checkpoints")}
    authoritative = Counter(
        (r["run_key"], r["stage"])
        for r in stack.query("SELECT run_key, stage FROM attempts WHERE authoritative = 1")
    )
    assert set(authoritative) == checkpointed
    assert all(n == 1 for n in authoritative.values()), authoritative


def assert_outcome(stack: Stack, review_rows: Counter, plan_rows: Counter, llm: dict, edits: int) -> None:
    states = {r["run_key"]: r["state"] for r in stack.query("SELECT run_key, state FROM runs")}
    assert states and set(states.values()) == {"completed"}, states
    [review] = attempt_rows(stack, "review").values()
    [plan] = attempt_rows(stack, "plan").values()
    assert review == review_rows
    assert plan == plan_rows
    expected = {p: 1 for p in PROMPTS}
    expected.update(llm)
    assert stack.llm_calls() == expected
    gh = stack.gh_state()
    assert gh["counters"].get("comments_created", 0) == 1
    assert gh["counters"].get("comments_edited", 0) == edits
    [comment] = gh["comments"]
    assert comment["repo"] == REPO and comment["issue"] == PR
    assert comment["body"].startswith(f"<!-- adr-review:v1 path={ADR_PATH} key=rk")
    assert_one_authoritative_per_stage(stack)


ENGINES = ("sqlite", "postgres")


def fresh(stack: Stack, name: str, engine: str, request: pytest.FixtureRequest) -> None:
    postgres = request.getfixturevalue("postgres") if engine == "postgres" else None
    stack.fresh(f"{engine}-{name}", postgres=postgres)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("name", "kill_at", "review_rows", "plan_rows", "llm", "edits"), MATRIX, ids=[m[1] for m in MATRIX]
)
def test_kill_and_restart(
    stack: Stack,
    name: str,
    kill_at: str,
    review_rows: Counter,
    plan_rows: Counter,
    llm: dict,
    edits: int,
    engine: str,
    request: pytest.FixtureRequest,
) -> None:
    fresh(stack, kill_at.replace(":", "_"), engine, request)
    first, port = stack.serve(kill_at=kill_at)
    assert port is not None
    status, _ = post_webhook(port, "pull_request", pr_payload(), "kill-" + kill_at)
    assert status == 202
    assert first.wait_exit(120) == -9, first.output()
    assert any(line.startswith("TEST KILL at") for line in first.lines)
    stack.apps.remove(first)
    second, _ = stack.serve(role="worker")
    stack.wait_until("all runs settled", lambda: stack.settled(2), timeout=120)
    try:
        assert_outcome(stack, review_rows, plan_rows, llm, edits)
    finally:
        stack.stop_apps()


@pytest.mark.parametrize("engine", ENGINES)
def test_two_workers_claim_the_same_run_at_once(
    stack: Stack, tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    """Row 5 (TOCTOU): both processes see the run unleased and claim at the same moment (on
    PostgreSQL: SELECT ... FOR UPDATE SKIP LOCKED); one executes, the other records `skipped-locked`
    and does nothing else."""
    fresh(stack, "two-workers", engine, request)
    barrier = f"{tmp_path / 'barrier'}:2:review"
    first, port = stack.serve("--workers", "1", claim_barrier=barrier)
    assert port is not None
    assert post_webhook(port, "pull_request", pr_payload(), "two-workers")[0] == 202
    stack.wait_until(
        "the review run to be queued (its first claimer waits at the barrier)",
        lambda: bool(stack.query("SELECT 1 FROM queue WHERE kind = 'review'")),
    )
    stack.serve("--workers", "1", claim_barrier=barrier, role="worker")
    stack.wait_until("all runs settled", lambda: stack.settled(2), timeout=120)
    try:
        [review] = attempt_rows(stack, "review").values()
        assert review == ALL_EXECUTED + rows(("run", L))
        owners = {
            r["outcome"]: r["owner"]
            for r in stack.query(
                "SELECT a.outcome, a.owner FROM attempts a JOIN queue q USING (run_key) WHERE q.kind = 'review'"
            )
        }
        assert owners[L] != owners[E]  # the loser skipped, the winner executed
        assert sum("TEST BARRIER passed" in line for p in stack.apps for line in p.lines) == 2
        assert stack.llm_calls() == {p: 1 for p in PROMPTS}
        assert stack.gh_state()["counters"]["comments_created"] == 1
        assert_one_authoritative_per_stage(stack)
    finally:
        stack.stop_apps()
