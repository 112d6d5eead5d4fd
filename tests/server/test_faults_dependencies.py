"""Faults of the App's dependencies that happen every week (issue 26), with real processes: `adr-review
serve` on a real PostgreSQL server (tests/postgres.py) and a real `chroma run` (tests/chroma_server.py).
None of them may publish a degraded review: the run fails, the queue retries it with back-off, and the
one comment is written from a complete run, with no internal error text in it.

- PostgreSQL stopped while a critic's answer is being checkpointed (a real fault, not a fake);
- Chroma SIGSTOPped for 60 s: every call ends within its timeout and the run is failed over;
- Chroma not up yet when the first review runs (a cold start).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.chroma_server import start_chroma, stop_chroma
from tests.postgres import _free_port
from tests.server.harness import ADR_PATH, PR, Proc, Stack, post_webhook, pr_payload

pytestmark = pytest.mark.real_process

# What an internal error looks like in text: none of it may reach the comment.
LEAKS = ("failed (", "Error", "PoolTimeout", "AdminShutdown", "terminating connection", "Traceback")
# A quick retry so the tests wait seconds, not minutes (defaults: docs/app.md, "Faults").
QUICK = {
    "ADR_REVIEW_RETRY_BACKOFF_S": "2",
    "ADR_REVIEW_CHROMA_CONNECT_TIMEOUT_S": "2",
    "ADR_REVIEW_CHROMA_READ_TIMEOUT_S": "3",
    "ADR_REVIEW_CHROMA_RETRIES": "1",
}


def wait_for_line(proc: Proc, *needles: str, timeout: float) -> str:
    """The first output line containing one of `needles`, within a deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(proc.lines):
            if any(n in line for n in needles):
                return line
        time.sleep(0.05)
    raise AssertionError(f"{proc.name}: no line with {needles}; output:\n{proc.output()}")


def review_attempts(stack: Stack) -> list[Any]:
    return stack.query(
        "SELECT a.stage, a.outcome, a.error FROM attempts a JOIN queue q USING (run_key) "
        "WHERE q.kind = 'review' ORDER BY a.id"
    )


def assert_one_complete_comment(stack: Stack) -> str:
    states = {r["run_key"]: r["state"] for r in stack.query("SELECT run_key, state FROM runs")}
    assert states and set(states.values()) == {"completed"}, states
    gh = stack.gh_state()
    assert gh["counters"].get("comments_created", 0) == 1
    [comment] = gh["comments"]
    body: str = comment["body"]
    assert comment["issue"] == PR and body.startswith(f"<!-- adr-review:v1 path={ADR_PATH} key=rk")
    assert not [leak for leak in LEAKS if leak in body], body
    return body


def assert_recall_and_both_critics(body: str) -> None:
    assert "Related past decisions" in body and "No related past decisions found" not in body, body
    # both critics answered (the fake's quotes are not in the ADR: their findings are listed unverified)
    assert "Raised by: Devil's Advocate" in body and "Raised by: Pre-mortem" in body, body
    assert "What did not run" not in body, body


def test_a_database_stop_inside_a_stage_is_retried_not_published_degraded(
    stack: Stack, postgres: Any, tmp_path: Path
) -> None:
    """The Devil's Advocate has answered; before its answer is stored, PostgreSQL goes down
    (`pg_ctl stop -m fast`): the stage fails, the run is retried once the server is back, and the
    comment has both critics, without a trace of the database error."""
    stack.fresh("pg-stop-in-stage", postgres=postgres)
    release = tmp_path / "release"
    app, port = stack.serve(env=QUICK, pause=("critic:devils_advocate", "during", release))
    assert port is not None
    stopped = False
    try:
        assert post_webhook(port, "pull_request", pr_payload(), "pg-stop-in-stage")[0] == 202
        app.wait_for("TEST PAUSE at critic:devils_advocate:during", timeout=120)
        postgres.stop_server()
        stopped = True
        release.touch()
        # the store's error reaches the stage: logged where it happened (with the fix) or swallowed
        # into the critic's "failed (...)" (without it); either way the database comes back now
        wait_for_line(app, "stage_not_stored", "blindspot_node_crashed", timeout=120)
        postgres.start_server()
        stopped = False
        stack.wait_until("all runs settled", lambda: stack.settled(2), timeout=180)
        body = assert_one_complete_comment(stack)
        assert_recall_and_both_critics(body)
        # the failed attempt is on record: the worker's own row once the store answered again, or the
        # takeover's when the store came back after the lease had run out
        failed = [r["error"] or "" for r in review_attempts(stack) if r["outcome"] == "failed"]
        assert any("state store" in e or e.startswith("lease_expired") for e in failed), failed
        assert stack.llm_calls()["blindspot-devils-advocate"] == 2  # its answer was lost with the store
    finally:
        if stopped:
            postgres.start_server()
        stack.stop_apps()


@pytest.fixture
def own_chroma() -> Any:
    """A `chroma run` of this test's own (it is stopped or started on purpose): (proc, url, root)."""
    started = start_chroma()
    yield started
    stop_chroma(started[0], started[2])


def test_a_hung_chroma_fails_the_run_over_within_its_timeout(
    stack: Stack, postgres: Any, own_chroma: Any
) -> None:
    """Chroma SIGSTOPped for 60 s: the review's index calls end at their read timeout (2 tries of
    2 + 3 s) as an infrastructure error, the run is retried with back-off instead of hanging under a
    heartbeat-kept lease, no comment is written meanwhile, and once Chroma runs again the review
    completes with recall."""
    proc, url, _ = own_chroma
    stack.fresh("chroma-hung", postgres=postgres, chroma_url=url)
    app, port = stack.serve("--max-attempts", "20", env=QUICK)
    assert port is not None
    os.kill(proc.pid, signal.SIGSTOP)
    stopped_at = time.monotonic()
    try:
        assert post_webhook(port, "pull_request", pr_payload(), "chroma-hung")[0] == 202
        stack.wait_until(
            "a review attempt failed over on the Chroma timeout",
            lambda: any(
                r["outcome"] == "failed" and "Chroma server" in (r["error"] or "")
                for r in review_attempts(stack)
            ),
            timeout=60,  # a hang detector: the bound is ~11 s; without timeouts it never happens
        )
        assert stack.gh_state()["comments"] == []  # nothing published without recall
        time.sleep(max(0.0, 60 - (time.monotonic() - stopped_at)))
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    try:
        stack.wait_until("all runs settled", lambda: stack.settled(2), timeout=180)
        assert_recall_and_both_critics(assert_one_complete_comment(stack))
        assert stack.llm_calls()["recall-pre-gate"] == 1  # the retries paid for nothing twice
    finally:
        stack.stop_apps()


def test_chroma_down_at_cold_start_publishes_nothing_until_recall_can_run(
    stack: Stack, postgres: Any
) -> None:
    """The App starts before Chroma does (compose at a cold start): the review waits in the queue,
    retried with back-off, and its only comment, written once Chroma is up, has recall."""
    port_free = _free_port()
    url = f"http://127.0.0.1:{port_free}"
    stack.fresh("chroma-cold", postgres=postgres, chroma_url=url)
    app, port = stack.serve("--max-attempts", "20", env=QUICK)
    assert port is not None
    chroma = None
    try:
        assert post_webhook(port, "pull_request", pr_payload(), "chroma-cold")[0] == 202
        stack.wait_until(
            "a review attempt failed on the unreachable Chroma server (or a comment)",
            lambda: (
                bool(stack.gh_state()["comments"])
                or any(
                    r["outcome"] == "failed" and "Chroma server" in (r["error"] or "")
                    for r in review_attempts(stack)
                )
            ),
            timeout=90,
        )
        assert stack.gh_state()["comments"] == []  # not published without recall
        chroma = start_chroma(port_free)
        stack.wait_until("all runs settled", lambda: stack.settled(2), timeout=180)
        assert_recall_and_both_critics(assert_one_complete_comment(stack))
    finally:
        stack.stop_apps()
        if chroma is not None:
            stop_chroma(chroma[0], chroma[2])
