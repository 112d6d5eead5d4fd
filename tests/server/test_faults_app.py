"""Faults that happen every week (issue 26), with real `adr-review serve` processes on a real PostgreSQL
server: the database restarted in the middle of a webhook burst, a worker SIGTERMed with a short lease
while a review is in flight, and a run cancelled by a newer push. Each outcome is polled for until a
generous deadline; nothing here is a wall-clock budget.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from benchmarks.webhook_burst import head_for
from tests.server.harness import (
    ADR_PATH,
    HEAD,
    PR,
    PROPOSAL,
    REPO,
    SECRET,
    Stack,
    http_json,
    post_webhook,
    pr_payload,
    repo_seed,
)

pytestmark = pytest.mark.real_process

PROMPTS = ("recall-pre-gate", "blindspot-devils-advocate", "blindspot-premortem", "blindspot-judge")
CATCH_UP_EVERY_S = 2.0  # the tests' catch-up period (the default is 120 s: docs/app.md)


def github_delivers(stack: Stack, port: int, pr_index: int, guid: str) -> int:
    """GitHub's side of a delivery: the fake sends it signed and records the attempt (what catch-up
    lists), and says which status the App answered (0: no answer)."""
    row = http_json(
        "POST",
        stack.gh_url + "/_deliver",
        {
            "url": f"http://127.0.0.1:{port}/webhook",
            "event": "pull_request",
            "payload": pr_payload(PR + pr_index, head_for(pr_index)),
            "secret": SECRET,
            "guid": guid,
        },
        timeout=30,
    )
    return int(row["status_code"])


def stored_guids(stack: Stack) -> Counter[str]:
    return Counter(r["delivery_id"] for r in stack.query("SELECT delivery_id FROM deliveries"))


def test_a_postgres_restart_mid_burst_loses_no_delivery(stack: Stack, postgres: Any) -> None:
    """50 deliveries over 2 web processes; `pg_ctl restart -m fast` after the 15th answer. Then a longer
    outage (the server stopped while 4 deliveries arrive: each is refused after the store retries).
    Every delivery ends stored once: directly (the pool checks its connections, the ack retries the
    write) or through the periodic catch-up of either web process once the server is back."""
    n, outage = 50, 4
    stack.seed(repo_seed(pulls=n + outage))
    stack.fresh("pg-restart", postgres=postgres)
    env = {"ADR_REVIEW_CATCH_UP_EVERY_S": str(CATCH_UP_EVERY_S)}
    webs = [stack.serve(role="web", env=env)[1] for _ in range(2)]
    assert all(webs)
    guids = [str(uuid.uuid4()) for _ in range(n + outage)]
    answered = threading.Semaphore(0)

    def send(i: int) -> int:
        status = github_delivers(stack, webs[i % 2], i, guids[i])  # type: ignore[arg-type]
        answered.release()
        return status

    try:
        with ThreadPoolExecutor(4) as pool:
            burst = [pool.submit(send, i) for i in range(n)]
            for _ in range(15):
                assert answered.acquire(timeout=120)
            postgres.restart()  # while the rest of the burst is arriving
            statuses = [f.result() for f in burst]
        stack.wait_until("the burst stored", lambda: set(stored_guids(stack)) >= set(guids[:n]), timeout=120)

        postgres.stop_server()
        try:
            with ThreadPoolExecutor(outage) as pool:
                refused = list(pool.map(send, range(n, n + outage)))
        finally:
            postgres.start_server()
        assert refused == [503] * outage  # after the retries: 5xx, and the log names each delivery
        logs = "\n".join(line for p in stack.apps for line in p.lines)
        for guid in guids[n:]:
            assert any("webhook_store_failed" in line and guid in line for line in logs.splitlines())
        stack.wait_until(
            f"catch-up (every {CATCH_UP_EVERY_S:g} s) to recover the refused deliveries",
            lambda: set(stored_guids(stack)) >= set(guids),
            timeout=120,
        )
        stored = stored_guids(stack)
        assert sorted(stored) == sorted(guids) and set(stored.values()) == {1}  # every delivery, once
        plans = stack.query("SELECT COUNT(*) AS n FROM queue WHERE kind = 'plan'")[0]["n"]
        assert plans == n + outage  # one plan run per delivery: a redelivery asked twice queues nothing
        print(f"burst statuses: {Counter(statuses)}")  # what was stored directly vs through catch-up
    finally:
        stack.stop_apps()


def test_sigterm_with_a_short_lease_pays_no_stage_twice(stack: Stack, postgres: Any) -> None:
    """A lease of 6 s, two worker processes; the one running the review gets SIGTERM while both critics
    are in flight (2.5 s each; the Judge takes 6 s). The heartbeat keeps the lease while the critics
    finish; the run stops at the next stage boundary and is handed back; the other worker resumes it
    from the checkpoints. Before: the lease ran out during the shutdown wait and the Judge was paid
    twice. A lease too short for the shutdown wait is refused at start."""
    stack.fresh("sigterm", postgres=postgres)
    short = {"ADR_REVIEW_SHUTDOWN_WAIT_S": "10"}  # with the harness's 4 s lease
    refused, _ = stack.serve("--workers", "1", role="worker", env=short, ready=False)
    assert refused.wait_exit(60) == 2
    assert "ADR_REVIEW_LEASE_TTL_S" in refused.output() and "ADR_REVIEW_SHUTDOWN_WAIT_S" in refused.output()
    stack.apps.remove(refused)

    stack.slow("blindspot-devils-advocate", 2.5)
    stack.slow("blindspot-premortem", 2.5)
    stack.slow("blindspot-judge", 6.0)
    lease = ("--lease-ttl", "6", "--workers", "1")
    wait = {"ADR_REVIEW_SHUTDOWN_WAIT_S": "4"}  # 6 s x 2/3 outlasts it
    try:
        _, port = stack.serve(*lease, env=wait)
        stack.serve(*lease, env=wait, role="worker")
        assert port is not None
        assert post_webhook(port, "pull_request", pr_payload(), "sigterm-1")[0] == 202
        stack.wait_until(
            "both critics in flight",
            lambda: all(stack.llm_calls().get(p, 0) == 1 for p in PROMPTS[1:3]),
        )
        [holder] = stack.query(
            "SELECT r.lease_owner FROM runs r JOIN queue q USING (run_key) WHERE q.kind = 'review'"
        )
        pid = int(str(holder["lease_owner"]).split(":")[-2])
        doomed = next(p for p in stack.apps if p.popen.pid == pid)
        os.kill(pid, signal.SIGTERM)
        assert doomed.wait_exit(60) == 0, doomed.output()
        stack.wait_until("every run settled", lambda: stack.settled(2), timeout=120)
        states = {
            r["kind"]: r["state"]
            for r in stack.query("SELECT q.kind, r.state FROM queue q JOIN runs r USING (run_key)")
        }
        assert states == {"plan": "completed", "review": "completed"}
        assert stack.llm_calls() == {p: 1 for p in PROMPTS}  # no stage paid twice
        review = Counter(
            (r["stage"], r["outcome"], r["error"] or "")
            for r in stack.query(
                "SELECT a.stage, a.outcome, a.error FROM attempts a JOIN queue q USING (run_key) WHERE q.kind = 'review'"
            )
        )
        assert review[("run", "failed", "interrupted: worker shut down")] == 1  # handed back, once
        assert review[("critic:devils_advocate", "executed", "")] == 1
        assert review[("critic:devils_advocate", "skipped-checkpoint", "")] == 1  # resumed from it
        assert not any(s == "run" and e.startswith("lease_expired") for s, _, e in review)
        assert stack.gh_state()["counters"].get("comments_created") == 1
    finally:
        stack.stop_apps()


def test_a_run_cancelled_by_a_newer_push_logs_no_error_and_degrades_nothing(
    stack: Stack, postgres: Any
) -> None:
    """The first head's review is in its recall model call when a second push arrives: its plan cancels
    that review. Before: ERROR tracebacks (the critics "crashed"), "lease lost", and a recall that
    "fell back to extractive". Now: one info line, `run_cancelled`; nothing degraded or published."""
    stack.fresh("cancelled", postgres=postgres)
    newer = "d" * 40
    changed = PROPOSAL.replace("## Consequences\n\n", "## Consequences\n\nA second push changed this. ", 1)
    files = dict(repo_seed()["repos"][REPO]["refs"][HEAD], **{ADR_PATH: changed})
    pull = dict(repo_seed()["repos"][REPO]["pulls"][str(PR)], head_sha=newer)
    stack.slow("recall-pre-gate", 4.0)
    try:
        proc, port = stack.serve("--workers", "2")
        assert port is not None
        assert post_webhook(port, "pull_request", pr_payload(), "push-1")[0] == 202
        stack.wait_until(
            "the first review's recall in flight", lambda: stack.llm_calls().get(PROMPTS[0], 0) == 1
        )
        stack.seed({"repos": {REPO: {"refs": {newer: files}, "pulls": {str(PR): pull}}}})
        assert (
            post_webhook(port, "pull_request", pr_payload(head=newer, action="synchronize"), "push-2")[0]
            == 202
        )
        stack.wait_until("every run settled", lambda: stack.settled(4), timeout=120)
        # the cancelled run's own recall call returns after the cancellation; let it land
        stack.wait_until(
            "the cancelled run logged", lambda: any("run_cancelled" in line for line in proc.lines)
        )
        reviews = {
            r["head_sha"]: (r["run_key"], r["state"])
            for r in stack.query(
                "SELECT q.head_sha, q.run_key, r.state FROM queue q JOIN runs r USING (run_key) WHERE q.kind = 'review'"
            )
        }
        assert {h: s for h, (_, s) in reviews.items()} == {HEAD: "cancelled", newer: "completed"}
        old_key = reviews[HEAD][0]
        lines = proc.lines
        assert [line for line in lines if " ERROR " in line or "Traceback" in line] == []
        [cancelled] = [line for line in lines if "run_cancelled" in line]
        assert " INFO " in cancelled and old_key in cancelled and "superseded by" in cancelled
        for degraded in ("fell_back", "lease lost", "blindspot_node_crashed", "recall_pre_gate_failed"):
            assert not any(degraded in line for line in lines), degraded
        calls = stack.llm_calls()
        assert {p: calls.get(p, 0) for p in PROMPTS[1:]} == {p: 1 for p in PROMPTS[1:]}  # the newer run's
        [comment] = stack.gh_state()["comments"]
        assert f"head={newer}" in comment["body"].splitlines()[0]
    finally:
        stack.stop_apps()
