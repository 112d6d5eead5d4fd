"""The App past one host: review throughput per worker process on PostgreSQL, and the webhook's
acknowledgement latency on PostgreSQL vs SQLite, in one run.

    .venv/bin/python benchmarks/app_scale.py [--workers 1,2,4] [--reviews 32] [--delay 0.5]
                                             [--deliveries 200] [--concurrency 8] [--skip-scaling]

Needs PostgreSQL's server binaries (Debian: apt-get install postgresql; a throwaway cluster is made in
a temporary folder, tests/postgres.py) and starts a Chroma server (`chroma run`), the fake Anthropic
API (every call answering after --delay seconds) and the fake GitHub API, all on loopback.

1. Throughput. For each worker count W: a fresh schema, one `--role web` process and W `--role worker`
   processes of one worker thread each, every process in a folder of its own (they share PostgreSQL and
   the Chroma server only). --reviews signed deliveries are sent, each a PR adding an ADR of its own
   text (so no review reuses another's model answers); reviews per minute = reviews / (time from the
   first delivery to the last review completed) x 60. A review makes 4 model calls, 3 in sequence.
2. Acknowledgements. For each engine: `serve --role all --workers 2`, a warm-up delivery, then
   --deliveries signed deliveries from --concurrency client threads while the workers are busy;
   p50 / p99 of the time to the 202, and every delivery checked stored once.
Prints Markdown tables and a JSON line; `uptime` before and after (other work shares the cores).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.webhook_burst import head_for, send_burst  # noqa: E402
from tests.chroma_server import start_chroma  # noqa: E402
from tests.postgres import Cluster, start_cluster  # noqa: E402
from tests.server.harness import ADR_PATH, PR, PROPOSAL, REPO, Stack, repo_seed  # noqa: E402


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def own_adrs(pulls: int, adr_every: int = 1) -> dict[str, Any]:
    """A PR per delivery; every `adr_every`-th adds an ADR whose context is its own."""
    seed = repo_seed(pulls=pulls, adr_every=adr_every)
    refs = seed["repos"][REPO]["refs"]
    for i in range(0, pulls, adr_every):
        text = PROPOSAL.replace("## Context\n\n", f"## Context\n\nPR {PR + i} has context of its own. ", 1)
        refs[head_for(i)] = dict(refs[head_for(i)], **{ADR_PATH: text})
    return seed


def throughput(
    stack: Stack, pg: Cluster, chroma: str, workers: int, reviews: int, tmp: Path
) -> dict[str, Any]:
    stack.seed(own_adrs(reviews))
    stack.fresh(f"scale-{workers}", postgres=pg, chroma_url=chroma)
    quiet = {"ADR_REVIEW_LOG_LEVEL": "WARNING"}

    def host(name: str) -> dict[str, Any]:
        d = tmp / f"w{workers}-{name}"
        d.mkdir()
        return {"cwd": d, "store_dir": d / "store", "env": quiet}

    try:
        _, port = stack.serve("--no-catch-up", role="web", **host("web"))
        assert port is not None
        for i in range(workers):
            stack.serve("--workers", "1", role="worker", **host(f"worker-{i}"))
        t0 = time.perf_counter()
        burst = send_burst(port, reviews, 8)
        stack.wait_until("reviews done", lambda: stack.settled(2 * reviews), timeout=1800)
        wall = time.perf_counter() - t0
        done = stack.query(
            "SELECT COUNT(*) AS n FROM queue q JOIN runs r USING (run_key)"
            " WHERE q.kind = 'review' AND r.state = 'completed'"
        )[0]["n"]
        calls = sum(stack.llm_calls().values())
    finally:
        stack.stop_apps()
    return {
        "workers": workers,
        "reviews": int(done),
        "wall_s": round(wall, 1),
        "reviews_per_min": round(done / wall * 60, 1),
        "model_calls": calls,
        "acked": burst.statuses.count(202),
    }


def acks(stack: Stack, pg: Cluster | None, n: int, concurrency: int) -> dict[str, Any]:
    engine = "postgres" if pg is not None else "sqlite"
    stack.seed(own_adrs(n + 1))
    stack.fresh(f"acks-{engine}", postgres=pg)
    quiet = {"ADR_REVIEW_LOG_LEVEL": "WARNING"}
    try:
        _, port = stack.serve("--workers", "2", "--no-catch-up", env=quiet)
        assert port is not None
        send_burst(port, 1, 1, first_pr=n)  # warm-up: imports, the first token, the first parse
        stack.wait_until("warm-up run", lambda: stack.settled(2), timeout=300)
        burst = send_burst(port, n, concurrency)
        busy = stack.query("SELECT COUNT(*) AS n FROM runs WHERE state = 'running'")[0]["n"]
        stored = {r["delivery_id"] for r in stack.query("SELECT delivery_id FROM deliveries")}
    finally:
        stack.stop_apps()
    lat = burst.latencies_ms
    return {
        "engine": engine,
        "deliveries": n,
        "concurrency": concurrency,
        "status_202": burst.statuses.count(202),
        "p50_ms": round(statistics.median(lat), 2),
        "p99_ms": round(burst.pct(99), 2),
        "max_ms": round(max(lat), 2),
        "running_at_end": int(busy),
        "missing": len(set(burst.guids) - stored),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="worker process counts, comma-separated")
    parser.add_argument("--reviews", type=int, default=32)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds every fake model call takes")
    parser.add_argument("--deliveries", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--skip-scaling", action="store_true")
    args = parser.parse_args(argv)
    load_before = uptime()
    pg = start_cluster()
    chroma: subprocess.Popen[bytes] | None = None
    chroma_dir: Path | None = None
    scaling: list[dict[str, Any]] = []
    ack_rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="adr-scale-") as tmp:
            root = Path(tmp)
            if not args.skip_scaling:
                chroma, url, chroma_dir = start_chroma()
                (root / "scaling").mkdir()
                stack = Stack(root / "scaling", llm_delay=args.delay)
                try:
                    for w in (int(x) for x in args.workers.split(",")):
                        scaling.append(throughput(stack, pg, url, w, args.reviews, root))
                        print(json.dumps(scaling[-1]), flush=True)
                finally:
                    stack.close()
            (root / "acks").mkdir()
            stack = Stack(root / "acks")
            try:
                for engine_pg in (pg, None):
                    ack_rows.append(acks(stack, engine_pg, args.deliveries, args.concurrency))
                    print(json.dumps(ack_rows[-1]), flush=True)
            finally:
                stack.close()
    finally:
        if chroma is not None:
            chroma.terminate()
            chroma.wait(10)
        if chroma_dir is not None:
            shutil.rmtree(chroma_dir, ignore_errors=True)
        pg.stop()
    load_after = uptime()
    if scaling:
        base = scaling[0]["reviews_per_min"]
        print(f"\nmodel calls answer after {args.delay} s; load before: {load_before}; after: {load_after}\n")
        print("| worker processes | reviews | wall s | reviews / min | vs 1 | model calls |")
        print("|---|---|---|---|---|---|")
        for r in scaling:
            ratio = r["reviews_per_min"] / base if base else float("nan")
            print(
                f"| {r['workers']} | {r['reviews']} | {r['wall_s']} | {r['reviews_per_min']} | "
                f"{ratio:.2f} | {r['model_calls']} |"
            )
    print(
        f"\n{args.deliveries} deliveries, {args.concurrency} client threads, `serve --role all --workers 2`\n"
    )
    print("| engine | 202 | p50 ms | p99 ms | max ms | runs in progress at the end | missing |")
    print("|---|---|---|---|---|---|---|")
    for r in ack_rows:
        print(
            f"| {r['engine']} | {r['status_202']} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | "
            f"{r['running_at_end']} | {r['missing']} |"
        )
    print(json.dumps({"scaling": scaling, "acks": ack_rows, "load": [load_before, load_after]}))
    ok = all(r["missing"] == 0 and r["status_202"] == args.deliveries for r in ack_rows)
    return 0 if ok and all(r["reviews"] == args.reviews for r in scaling) else 1


if __name__ == "__main__":
    sys.exit(main())
