"""Retrieval benchmark: quality on the shared corpora and speed on this machine, against the bars.

    .venv/bin/python benchmarks/bench_retrieval.py [--corpora ../shared/corpora] [--quality-only | --speed-only]

Quality: `adr-review eval retrieval` on every corpus (offline embedding, default pipeline); the
micro-averaged English and Japanese figures and the per-corpus hybrid-vs-BM25 gap are checked against
the bars. Speed (all through the real CLI in fresh processes, as a user runs it, unless noted):
cold indexing of every corpus, re-indexing after one ADR changed, recall latency on the warm Japanese
index (in-process median over its qrels queries, and one CLI call), and `adr-review --help`.
Prints figures and PASS/FAIL; exit 1 if a bar fails. Nothing here is used by the tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = REPO / ".." / "shared" / "corpora"
ADR_REVIEW = [sys.executable, "-m", "adr_review"]
JA = "kompiro__karasu"
BARS = {
    "en_recall": 0.76,
    "en_mrr": 0.68,
    "ja_recall": 0.72,
    "ja_mrr": 0.78,
    "max_gap_vs_bm25": 0.02,
    "cold_index_s": 30.0,
    "reindex_one_s": 3.0,
    "recall_median_ms": 150.0,
    "help_s": 0.5,
}


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def cli(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([*ADR_REVIEW, *args], cwd=REPO, check=True, capture_output=True, env=_env())
    return time.perf_counter() - start


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("ADR_REVIEW_LOG_LEVEL", "WARNING")
    return env


def quality(corpora_root: Path) -> list[bool]:
    from adr_review.evals.retrieval import aggregate, evaluate_corpus, find_corpora

    print("## Quality (offline-hash, default pipeline; Recall@5 / Hit@5 / MRR)")
    reports = []
    with tempfile.TemporaryDirectory(prefix="adr-bench-q-") as store:
        for corpus in find_corpora(corpora_root):
            reports.append(evaluate_corpus(corpus, store_dir=Path(store)))
    oks: list[bool] = []
    print("| corpus | queries | BM25 | dense | hybrid | hybrid - BM25 (R@5) |")
    print("|---|---|---|---|---|---|")
    for rep in reports:
        m = rep.metrics()
        gap = m["hybrid"].recall_at_5 - m["bm25"].recall_at_5
        ok = gap >= -BARS["max_gap_vs_bm25"]
        oks.append(ok)
        cells = " | ".join(
            f"{m[k].recall_at_5:.3f} / {m[k].hit_at_5:.3f} / {m[k].mrr:.3f}"
            for k in ("bm25", "dense", "hybrid")
        )
        print(f"| {rep.name} | {m['hybrid'].queries} | {cells} | {gap:+.3f} {verdict(ok)} |")
    groups = {
        "English (6 corpora)": [r for r in reports if r.name != JA],
        "Japanese (kompiro__karasu)": [r for r in reports if r.name == JA],
    }
    for label, group in groups.items():
        if not group:
            continue
        m = aggregate(group)
        cells = " | ".join(
            f"{m[k].recall_at_5:.3f} / {m[k].hit_at_5:.3f} / {m[k].mrr:.3f}"
            for k in ("bm25", "dense", "hybrid")
        )
        print(f"| **{label}** | {m['hybrid'].queries} | {cells} | |")
    en, ja = aggregate(groups["English (6 corpora)"]), aggregate(groups["Japanese (kompiro__karasu)"])
    checks = [
        ("English Recall@5", en["hybrid"].recall_at_5, BARS["en_recall"]),
        ("English MRR", en["hybrid"].mrr, BARS["en_mrr"]),
        ("Japanese Recall@5", ja["hybrid"].recall_at_5, BARS["ja_recall"]),
        ("Japanese MRR", ja["hybrid"].mrr, BARS["ja_mrr"]),
    ]
    print()
    for name, value, bar in checks:
        oks.append(value >= bar)
        print(f"{name}: {value:.3f} (bar >= {bar}) {verdict(value >= bar)}")
    print(
        f"hybrid never below BM25 by more than {BARS['max_gap_vs_bm25']} R@5 on any corpus: {verdict(all(oks[: len(reports)]))}"
    )
    return oks


def speed(corpora_root: Path) -> list[bool]:
    from adr_review.adapters.index_open import ensure_synced, open_index_for
    from adr_review.evals.retrieval import find_corpora, load_qrels

    print(f"\n## Speed (this machine: {os.cpu_count() or 0} cores)")
    oks: list[bool] = []
    corpora = find_corpora(corpora_root)
    with tempfile.TemporaryDirectory(prefix="adr-bench-s-") as tmp:
        store = Path(tmp) / "store"
        total = 0.0
        for corpus in corpora:
            total += cli("index", "--adr-dir", str(corpus), "--store", str(store))
        n_adrs = sum(1 for c in corpora for p in c.rglob("*.md") if p.name.lower() != "readme.md")
        ok = total < BARS["cold_index_s"]
        oks.append(ok)
        print(
            f"cold index, {len(corpora)} corpora ({n_adrs} ADRs), one `adr-review index` each: {total:.1f}s (bar < {BARS['cold_index_s']:.0f}s) {verdict(ok)}"
        )

        ja_src = corpora_root / JA
        if ja_src.is_dir():
            ja = Path(tmp) / JA
            shutil.copytree(ja_src, ja)
            ja_store = Path(tmp) / "ja-store"
            cli("index", "--adr-dir", str(ja), "--store", str(ja_store))
            victim = sorted(ja.glob("*.md"))[len(list(ja.glob("*.md"))) // 2]
            victim.write_text(
                victim.read_text(encoding="utf-8") + "\n\n追記: ベンチマーク用の変更。\n", encoding="utf-8"
            )
            t = cli("index", "--adr-dir", str(ja), "--store", str(ja_store))
            ok = t < BARS["reindex_one_s"]
            oks.append(ok)
            print(
                f"re-index after changing one ADR ({JA}, 244 ADRs), `adr-review index`: {t:.2f}s (bar < {BARS['reindex_one_s']:.0f}s) {verdict(ok)}"
            )

            index = open_index_for(ja, ja_store)
            ensure_synced(index, ja)
            qrels = load_qrels(ja / "qrels.jsonl")
            times = []
            for q in qrels:
                start = time.perf_counter()
                index.search(q.query_text, exclude_paths=frozenset({q.query}))
                times.append((time.perf_counter() - start) * 1000)
            med = statistics.median(times)
            ok = med < BARS["recall_median_ms"]
            oks.append(ok)
            print(
                f"recall on the warm {JA} index, in-process, {len(times)} queries (whole index, no pool): "
                f"median {med:.1f} ms, p90 {statistics.quantiles(times, n=10)[-1]:.1f} ms (bar < {BARS['recall_median_ms']:.0f} ms) {verdict(ok)}"
            )
            t = cli(
                "recall",
                "--adr-dir",
                str(ja),
                "--store",
                str(ja_store),
                "--file",
                str(victim),
                "--offline",
                "--json",
            )
            print(
                f"one `adr-review recall --file ... --offline` process on the warm index, end to end: {t:.2f}s (for reference)"
            )
    script = Path(sys.executable).parent / "adr-review"  # the installed console script, as users run it
    help_cmd = [str(script)] if script.is_file() else ADR_REVIEW
    helps = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([*help_cmd, "--help"], cwd=REPO, check=True, capture_output=True)
        helps.append(time.perf_counter() - start)
    med = statistics.median(helps)
    ok = med < BARS["help_s"]
    oks.append(ok)
    print(
        f"`{' '.join(Path(c).name for c in help_cmd)} --help`, median of 5: {med:.3f}s "
        f"(bar < {BARS['help_s']}s) {verdict(ok)}"
    )
    return oks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--quality-only", action="store_true")
    group.add_argument("--speed-only", action="store_true")
    args = ap.parse_args()
    oks: list[bool] = []
    if not args.speed_only:
        oks += quality(args.corpora.resolve())
    if not args.quality_only:
        oks += speed(args.corpora.resolve())
    print(f"\n{sum(oks)} passed, {len(oks) - sum(oks)} failed")
    return 0 if all(oks) else 1


if __name__ == "__main__":
    sys.exit(main())
