"""Past one host (issue 16): web and worker processes that share nothing but PostgreSQL and a Chroma
server, each in a working directory and store folder of its own. A burst of signed deliveries spread
over 2 web processes, 3 worker processes, one of them SIGKILLed in the middle of a review (after the
Judge answered, before its checkpoint: the window ADR-0116 accepts) -> every delivery stored once,
every run completed, one comment per ADR, and no model call paid twice but that one Judge call."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.webhook_burst import head_for, send_burst
from tests.server.harness import ADR_PATH, PR, PROPOSAL, REPO, Stack, repo_seed

pytestmark = pytest.mark.real_process

PROMPTS = ("recall-pre-gate", "blindspot-devils-advocate", "blindspot-premortem", "blindspot-judge")


def distinct_proposals(pulls: int, adr_every: int) -> dict[str, Any]:
    """One PR per delivery; every `adr_every`-th adds an ADR of its own text (no two reviews read the
    same inputs, so none reuses another's model answers and every call is counted once)."""
    seed = repo_seed(pulls=pulls, adr_every=adr_every)
    refs = seed["repos"][REPO]["refs"]
    for i in range(0, pulls, adr_every):
        own = PROPOSAL.replace("## Context\n\n", f"## Context\n\nPR {PR + i} has context of its own. ", 1)
        refs[head_for(i)] = dict(refs[head_for(i)], **{ADR_PATH: own})
    return seed


def test_two_web_and_three_worker_hosts_one_killed_mid_review(
    stack: Stack, postgres: Any, chroma_server: str, tmp_path: Path
) -> None:
    n, adr_every = 30, 3
    reviews = n // adr_every
    stack.seed(distinct_proposals(n, adr_every))
    stack.fresh("several-hosts", postgres=postgres, chroma_url=chroma_server)
    hosts = {name: tmp_path / name for name in ("web-1", "web-2", "worker-1", "worker-2", "worker-3")}
    for d in hosts.values():
        d.mkdir()
    quiet = {"ADR_REVIEW_LOG_LEVEL": "WARNING"}

    def start(name: str, role: str, *args: str, **kw: Any) -> Any:
        return stack.serve(
            *args, role=role, env=quiet, cwd=hosts[name], store_dir=hosts[name] / "store", **kw
        )

    try:
        ports = [start(f"web-{i}", "web", "--no-catch-up")[1] for i in (1, 2)]
        # The worker to be killed runs alone first (one thread), so it is the one that takes a review.
        doomed, _ = start("worker-1", "worker", "--workers", "1", kill_at="judge:during:review")
        bursts = [send_burst(ports[k], n // 2, 4, first_pr=k * (n // 2)) for k in (0, 1)]
        assert all(b.statuses == [202] * (n // 2) for b in bursts)
        assert doomed.wait_exit(120) == -9, doomed.output()
        stack.apps.remove(doomed)
        start("worker-2", "worker", "--workers", "2")
        start("worker-3", "worker", "--workers", "2")
        stack.wait_until("every run settled", lambda: stack.settled(n + reviews), timeout=240)

        guids = [g for b in bursts for g in b.guids]
        stored = [r["delivery_id"] for r in stack.query("SELECT delivery_id FROM deliveries")]
        assert sorted(stored) == sorted(guids)  # every delivery, once
        runs = Counter((r["kind"], r["state"]) for r in stack.query(
            "SELECT q.kind, r.state FROM queue q JOIN runs r USING (run_key)"))  # fmt: skip
        assert runs == {("plan", "completed"): n, ("review", "completed"): reviews}
        gh = stack.gh_state()
        per_pr = Counter(c["issue"] for c in gh["comments"])
        assert sorted(per_pr) == [PR + i for i in range(0, n, adr_every)] and set(per_pr.values()) == {1}
        assert gh["counters"].get("comments_created") == reviews
        calls = stack.llm_calls()
        assert {p: calls.get(p, 0) for p in PROMPTS} == {p: reviews for p in PROMPTS} | {
            "blindspot-judge": reviews + 1  # the killed worker's Judge answer, never checkpointed
        }
        lost = stack.query("SELECT COUNT(*) AS n FROM attempts WHERE error LIKE 'lease_expired%'")
        assert lost[0]["n"] == 1  # the killed attempt is on record
        for d in hosts.values():  # nothing shared through files: no SQLite store, no local index
            assert not list(d.rglob("*.sqlite3")) and not list(d.rglob("chroma"))
    finally:
        stack.stop_apps()
