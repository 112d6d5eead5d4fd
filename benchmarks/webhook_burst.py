"""Webhook acknowledgement latency under a burst, while the workers are busy.

    .venv/bin/python benchmarks/webhook_burst.py [--deliveries 200] [--concurrency 8] [--workers 2]

Starts the fake Anthropic and GitHub APIs and `adr-review serve` as separate processes on loopback
(tests/server/harness.py), seeds one repository with a pull request per delivery (each adding an ADR, so
every delivery becomes a plan run and a review run with three LLM stages and a comment), warms the
server up with one delivery, then sends the burst of signed `pull_request` deliveries from a thread pool
and times each acknowledgement at the client (request sent -> response read). The workers start on the
burst's first runs while it is still arriving: the acknowledgements are measured with busy workers.
Afterwards it waits for every run to settle and checks that none was lost or duplicated.
Prints a Markdown table and a JSON line. The bar: p99 under 100 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.server.harness import HEAD, PR, Stack, post_webhook, pr_payload, repo_seed  # noqa: E402


@dataclass
class Burst:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    guids: list[str] = field(default_factory=list)
    duplicates_reported: int = 0
    wall_s: float = 0.0

    def pct(self, p: float) -> float:
        data = sorted(self.latencies_ms)
        if not data:
            return float("nan")
        k = max(0, min(len(data) - 1, round(p / 100 * len(data) + 0.5) - 1))  # nearest-rank
        return data[k]


def head_for(i: int) -> str:
    return HEAD if i == 0 else f"{PR + i:040x}"


def send_burst(port: int, n: int, concurrency: int, *, first_pr: int = 0) -> Burst:
    """n signed pull_request deliveries (PR #7+first_pr ... ), each with a fresh delivery id."""
    burst = Burst()
    jobs = [(pr_payload(PR + i, head_for(i)), str(uuid.uuid4())) for i in range(first_pr, first_pr + n)]

    def one(job: tuple[dict[str, Any], str]) -> tuple[float, int, str, Any]:
        payload, guid = job
        t0 = time.perf_counter()
        status, body = post_webhook(port, "pull_request", payload, guid)
        return (time.perf_counter() - t0) * 1000, status, guid, body

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for ms, status, guid, body in pool.map(one, jobs):
            burst.latencies_ms.append(ms)
            burst.statuses.append(status)
            burst.guids.append(guid)
            if isinstance(body, dict) and body.get("duplicate"):
                burst.duplicates_reported += 1
    burst.wall_s = time.perf_counter() - t0
    return burst


def check_settled(stack: Stack, guids: list[str], expect_reviews: int) -> dict[str, Any]:
    deliveries = [r["delivery_id"] for r in stack.query("SELECT delivery_id FROM deliveries")]
    runs = stack.query("SELECT q.kind, r.state FROM queue q JOIN runs r USING (run_key)")
    gh = stack.gh_state()["counters"]
    return {
        "deliveries_stored": len(deliveries),
        "deliveries_unique": len(set(deliveries)),
        "burst_guids_missing": len(set(guids) - set(deliveries)),
        "plan_runs": sum(r["kind"] == "plan" for r in runs),
        "review_runs": sum(r["kind"] == "review" for r in runs),
        "not_completed": sum(r["state"] != "completed" for r in runs),
        "comments_created": gh.get("comments_created", 0),
        "expected_reviews": expect_reviews,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--deliveries", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--settle-timeout", type=float, default=900.0)
    parser.add_argument(
        "--split", action="store_true", help="HTTP and workers in two processes (--role web + --role worker)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="latencies only: do not wait for the runs to drain"
    )
    args = parser.parse_args(argv)
    n = args.deliveries
    with tempfile.TemporaryDirectory(prefix="adr-burst-") as tmp:
        stack = Stack(Path(tmp))
        try:
            stack.seed(repo_seed(pulls=n + 1))
            stack.fresh("burst")
            quiet = {"ADR_REVIEW_LOG_LEVEL": "WARNING"}
            if args.split:
                _, port = stack.serve("--no-catch-up", role="web", env=quiet)
                stack.serve("--workers", str(args.workers), role="worker", env=quiet)
            else:
                _, port = stack.serve("--workers", str(args.workers), "--no-catch-up", env=quiet)
            assert port is not None
            # Warm-up: one delivery through to its comment (imports, first token, first parse).
            warm = send_burst(port, 1, 1, first_pr=n)
            stack.wait_until("warm-up run", lambda: stack.settled(2), timeout=300)
            burst = send_burst(port, n, args.concurrency)
            busy = stack.query("SELECT COUNT(*) AS n FROM runs WHERE state = 'running'")[0]["n"]
            t_settle = time.perf_counter()
            if args.quick:
                print(
                    json.dumps(
                        {
                            "p50_ms": round(statistics.median(burst.latencies_ms), 2),
                            "p99_ms": round(burst.pct(99), 2),
                            "max_ms": round(max(burst.latencies_ms), 2),
                            "status_202": burst.statuses.count(202),
                            "running": busy,
                        }
                    )
                )
                return 0
            stack.wait_until("burst settled", lambda: stack.settled(2 * (n + 1)), timeout=args.settle_timeout)
            settle_s = time.perf_counter() - t_settle
            facts = check_settled(stack, burst.guids + warm.guids, n + 1)
            for r in stack.query(
                "SELECT r.run_key, r.state, r.error, q.attempts FROM runs r JOIN queue q USING (run_key)"
                " WHERE r.state != 'completed'"
            ):
                print(f"NOT COMPLETED {dict(r)}", file=sys.stderr)
        finally:
            stack.close()
    lat = burst.latencies_ms
    result = {
        "deliveries": n,
        "concurrency": args.concurrency,
        "workers": args.workers,
        "processes": "web + worker" if args.split else "one (all)",
        "status_202": burst.statuses.count(202),
        "p50_ms": round(statistics.median(lat), 2),
        "p95_ms": round(burst.pct(95), 2),
        "p99_ms": round(burst.pct(99), 2),
        "max_ms": round(max(lat), 2),
        "burst_wall_s": round(burst.wall_s, 2),
        "runs_running_at_burst_end": busy,
        "drain_after_burst_s": round(settle_s, 1),
        **facts,
    }
    ok = (
        result["status_202"] == n
        and facts["deliveries_unique"] == facts["deliveries_stored"] == n + 1
        and facts["burst_guids_missing"] == 0
        and facts["plan_runs"] == facts["review_runs"] == n + 1
        and facts["not_completed"] == 0
        and facts["comments_created"] == n + 1
    )
    print(
        "| deliveries | concurrency | processes | workers | p50 ms | p95 ms | p99 ms | max ms | lost | duplicated |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {n} | {args.concurrency} | {result['processes']} | {args.workers} | {result['p50_ms']} | {result['p95_ms']} | "
        f"{result['p99_ms']} | {result['max_ms']} | {facts['burst_guids_missing']} | "
        f"{facts['deliveries_stored'] - facts['deliveries_unique']} |"
    )
    print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
