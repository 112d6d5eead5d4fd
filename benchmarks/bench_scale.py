"""Scale benchmark: the index and recall on generated folders of N ADRs (benchmarks/make_folder.py).

    .venv/bin/python benchmarks/bench_scale.py [--sizes 100,644,2000,10000] [--corpora ../shared/corpora]
                                               [--work DIR] [--queries 40]

For every N, in fresh processes through the real CLI (as a user runs it), on the offline embedding:
cold index, no-op re-index, re-index after one ADR changed, one `adr-review recall --file ... --offline`
process on the warm index (median of 3); then, in one child process, warm in-process recall (the
median and p90 of `index.search` over --queries proposals taken from the folder, after a first search
that loads the index). Beside the cold index: the same cold index with the cross-language channel
off (`retrieval.multilingual: off`, into a store of its own), and its floor, one child process that
only reads the files, counts their BM25 terms and computes their hashed chunk vectors (no parse, no
Chroma, no file written): what no cold index can beat. Peak RSS is each process's own (wait4); the
store size is every file under --store (Chroma, the parse and lexical caches). Prints one markdown
table, the load average before and after, and PASS/FAIL against the bars of the scale issue (and of
issue 25 at 644 ADRs); exit 1 if a bar fails.
Nothing here is used by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.make_folder import DEFAULT_CORPORA, make_folder  # noqa: E402

ADR_REVIEW = [sys.executable, "-m", "adr_review"]
BARS = {
    "warm_recall_2000_ms": 50.0,  # median, in-process
    "process_recall_2000_s": 3.0,
    "noop_reindex_10000_s": 2.0,
    "process_recall_644_s": 0.7,  # issue 25: no chromadb import on a fresh index
    "cold_off_644_s": 5.0,  # issue 25: cold index, cross-language channel off
}
CHANNEL_OFF = 'retrieval:\n  multilingual: "off"\n'


def run_measured(cmd: list[str]) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS in MB, stdout, CPU seconds) of one child process; raises when it
    fails. CPU time (user + system) is what the machine's other load does not inflate much."""
    env = {**os.environ, "ADR_REVIEW_LOG_LEVEL": "WARNING"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=err, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        if proc.returncode != 0:
            tail = err.read().decode("utf-8", "replace")[-2000:]
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {tail}")
    return wall, usage.ru_maxrss / 1024, stdout, usage.ru_utime + usage.ru_stime


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def warm_child(folder: Path, store: Path, queries: int) -> None:
    """In-process: open and sync the index, then time `search` as the recall stage calls it."""
    import random
    import resource

    from adr_review.adapters.index_open import ensure_synced, open_index_for
    from adr_review.core.recall_query import recall_query

    index = open_index_for(folder, store)
    synced = ensure_synced(index, folder)
    picks = random.Random(1).sample(synced.adrs, min(queries + 1, len(synced.adrs)))
    times = []
    for adr in picks:
        start = time.perf_counter()
        index.search(recall_query(adr), top_n=20, exclude_paths=frozenset({adr.path}))
        times.append((time.perf_counter() - start) * 1000)
    first, rest = times[0], times[1:]
    print(
        json.dumps(
            {
                "first_ms": first,
                "median_ms": statistics.median(rest),
                "p90_ms": statistics.quantiles(rest, n=10)[-1],
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def floor_child(folder: Path) -> None:
    """In-process: the least a cold index must do, timed from the start of this process."""
    from adr_review.adapters.adr_files import list_adr_files
    from adr_review.adapters.embeddings import HashedNgramEmbedder
    from adr_review.core.chunking import ChunkParams, chunk_text
    from adr_review.core.lexical import TermCounts

    texts = [path.read_text(encoding="utf-8", errors="replace") for path, _rel in list_adr_files(folder)]
    counts = TermCounts.of(texts)
    embedder, params = HashedNgramEmbedder(), ChunkParams()
    chunks = sum(len(embedder.embed(chunk_text(t, "", params))) for t in texts)
    print(json.dumps({"adrs": len(texts), "terms": len(counts.vocab), "chunks": chunks}))


def measure(n: int, work: Path, corpora: Path, queries: int) -> dict[str, Any]:
    folder, store = work / f"n{n}" / "adr", work / f"n{n}" / "store"
    written = make_folder(n, folder, corpora)
    off_config, off_store = work / f"n{n}" / "channel-off.yml", work / f"n{n}" / "store-off"
    for cold in (store, off_store):  # both indexes are measured from nothing
        shutil.rmtree(cold, ignore_errors=True)
    index_cmd = [*ADR_REVIEW, "index", "--adr-dir", str(folder), "--store", str(store), "--json"]
    row: dict[str, Any] = {"n": n, "adr_mb": tree_bytes(folder) / 1e6, "load_before": os.getloadavg()[0]}
    row["cold_s"], row["cold_rss"], _, row["cold_cpu"] = run_measured(index_cmd)
    off_config.write_text(CHANNEL_OFF, encoding="utf-8")
    off_cmd = [
        *ADR_REVIEW,
        "index",
        "--adr-dir",
        str(folder),
        "--store",
        str(off_store),
        "--config",
        str(off_config),
    ]
    row["cold_off_s"], _, _, row["cold_off_cpu"] = run_measured([*off_cmd, "--json"])
    row["floor_s"], _, _, row["floor_cpu"] = run_measured([sys.executable, __file__, "--floor", str(folder)])
    time.sleep(2.5)  # past the mtime margin of the parse cache: a no-op must not hash anything
    noops = [run_measured(index_cmd) for _ in range(3)]
    row["noop_s"] = statistics.median(r[0] for r in noops)
    row["noop_cpu"] = statistics.median(r[3] for r in noops)
    row["noop_rss"] = max(r[1] for r in noops)
    victim = written[len(written) // 2]
    victim.write_text(
        victim.read_text(encoding="utf-8") + "\n\nAmended for the scale benchmark.\n", encoding="utf-8"
    )
    row["one_s"], row["one_rss"], out, row["one_cpu"] = run_measured(index_cmd)
    report = json.loads(out)
    assert report["updated"] == 1, report
    proposal = written[len(written) // 3]
    recall_cmd = [
        *ADR_REVIEW,
        "recall",
        "--adr-dir",
        str(folder),
        "--store",
        str(store),
        "--file",
        str(proposal),
        "--offline",
        "--json",
    ]
    runs = [run_measured(recall_cmd) for _ in range(3)]
    row["recall_s"] = statistics.median(r[0] for r in runs)
    row["recall_cpu"] = statistics.median(r[3] for r in runs)
    row["recall_rss"] = max(r[1] for r in runs)
    _, _, out, _ = run_measured(
        [sys.executable, __file__, "--warm", str(folder), str(store), "--queries", str(queries)]
    )
    warm = json.loads(out.strip().splitlines()[-1])
    row.update(
        warm_first_ms=warm["first_ms"],
        warm_median_ms=warm["median_ms"],
        warm_p90_ms=warm["p90_ms"],
        warm_rss=warm["rss_mb"],
    )
    row["store_mb"] = tree_bytes(store) / 1e6
    row["load_after"] = os.getloadavg()[0]
    return row


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| N ADRs | ADR MB | cold index | no-op re-index | re-index, 1 changed | recall process "
        "| warm recall median / p90 (first) | peak RSS index / recall / warm | store MB (x ADR) | load "
        "| cold index, channel off | its floor |"
    )
    lines = [
        "Times are wall (CPU) seconds; no-op and recall process: median of 3.",
        "",
        head,
        "|" + "---|" * 12,
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['adr_mb']:.1f} | {r['cold_s']:.1f} ({r['cold_cpu']:.1f}) "
            f"| {r['noop_s']:.2f} ({r['noop_cpu']:.2f}) | {r['one_s']:.2f} ({r['one_cpu']:.2f}) "
            f"| {r['recall_s']:.2f} ({r['recall_cpu']:.2f}) | {r['warm_median_ms']:.1f} / {r['warm_p90_ms']:.1f} ms "
            f"({r['warm_first_ms']:.0f} ms) | {r['cold_rss']:.0f} / {r['recall_rss']:.0f} / "
            f"{r['warm_rss']:.0f} MB | {r['store_mb']:.1f} ({r['store_mb'] / r['adr_mb']:.1f}x) "
            f"| {r['load_before']:.2f} -> {r['load_after']:.2f} "
            f"| {r['cold_off_s']:.1f} ({r['cold_off_cpu']:.1f}) | {r['floor_s']:.1f} ({r['floor_cpu']:.1f}) |"
        )
    return "\n".join(lines)


def verdicts(rows: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    by_n = {r["n"]: r for r in rows}
    out = []
    if 2000 in by_n:
        r = by_n[2000]
        out.append(
            (
                f"warm recall median at 2,000: {r['warm_median_ms']:.1f} ms (bar < {BARS['warm_recall_2000_ms']:.0f} ms)",
                r["warm_median_ms"] < BARS["warm_recall_2000_ms"],
            )
        )
        out.append(
            (
                f"recall process at 2,000: {r['recall_s']:.2f} s (bar < {BARS['process_recall_2000_s']:.0f} s)",
                r["recall_s"] < BARS["process_recall_2000_s"],
            )
        )
    if 644 in by_n:
        r = by_n[644]
        out.append(
            (
                f"recall process at 644: {r['recall_s']:.2f} s (bar <= {BARS['process_recall_644_s']:g} s)",
                r["recall_s"] <= BARS["process_recall_644_s"],
            )
        )
        out.append(
            (
                f"cold index at 644, channel off: {r['cold_off_s']:.2f} s (bar < {BARS['cold_off_644_s']:g} s; "
                f"floor {r['floor_s']:.2f} s)",
                r["cold_off_s"] < BARS["cold_off_644_s"],
            )
        )
    if 10000 in by_n:
        r = by_n[10000]
        out.append(
            (
                f"no-op re-index at 10,000: {r['noop_s']:.2f} s (bar < {BARS['noop_reindex_10000_s']:.0f} s)",
                r["noop_s"] < BARS["noop_reindex_10000_s"],
            )
        )
    ordered = sorted(rows, key=lambda r: r["n"])
    for a, b in zip(ordered, ordered[1:], strict=False):
        growth = (b["warm_median_ms"] / a["warm_median_ms"]) / (b["n"] / a["n"])
        out.append(
            (
                f"warm recall {a['n']:,} -> {b['n']:,}: x{b['warm_median_ms'] / a['warm_median_ms']:.2f} "
                f"for x{b['n'] / a['n']:.2f} ADRs (no faster than linear)",
                growth <= 1.0,
            )
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100,644,2000,10000")
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--work", type=Path, default=None, help="keep the folders and stores here")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--warm", nargs=2, type=Path, metavar=("FOLDER", "STORE"), help=argparse.SUPPRESS)
    ap.add_argument("--floor", type=Path, metavar="FOLDER", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.floor:
        floor_child(args.floor)
        return 0
    if args.warm:
        warm_child(args.warm[0], args.warm[1], args.queries)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"# Scale benchmark ({os.cpu_count()} cores; {load()} at start)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="adr-scale-") as tmp:
        work = args.work or Path(tmp)
        for n in sizes:
            rows.append(measure(n, work, args.corpora, args.queries))
            print(f"N={n:,} done ({load()})", file=sys.stderr, flush=True)
    print(table(rows))
    checks = verdicts(rows)
    print()
    for text, ok in checks:
        print(f"{text}: {'PASS' if ok else 'FAIL'}")
    print(f"({load()} at the end)")
    return 0 if all(ok for _t, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
