"""Sweep the fusion knobs on every corpus at once and print the aggregate table (how defaults were chosen).

    .venv/bin/python benchmarks/tune_fusion.py [--corpora ../shared/corpora] [--store DIR] [--top 15]

Each query is measured once (BM25, title coverage, best-chunk cosine); every knob combination then
re-ranks those measurements with the pure fusion (app.core.fusion.rank). The objective is the mean
of Recall@5 and MRR over the English queries (micro-averaged over the six English corpora) and over
the Japanese ones, so neither language dominates. Nothing is tuned per corpus or per query: the
`--holdout` mode shows what each corpus scores with the knobs chosen on the *other* corpora.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.adapters.index import QueryScores
from app.config import RetrievalConfig
from app.core.fusion import FusionParams, fuse, rank
from app.evals.retrieval import find_corpora, load_qrels, metrics_of
from app.pipeline.retrieval import ensure_synced, fusion_params, open_index_for

JA = {"kompiro__karasu"}
# Swept in stages (weights, then the gate, then MMR), each stage keeping the best of the previous one:
# a full cross product is ~700 re-rankings of 321 queries, too slow for a shared 2-core machine.
STAGES: list[dict[str, list[Any]]] = [
    {
        "dense_weight": [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4],
        "title_weight": [0.0, 0.1, 0.15, 0.2, 0.25, 0.3],
    },
    {"qualify_cosine": [0.25, 0.3, 0.35, 0.4, 0.5, 1.01], "qualify_bm25_rel": [0.2, 0.3, 0.4, 0.5, 0.6]},
    {"mmr_lambda": [1.0, 0.95, 0.9, 0.8, 0.7]},
]


def measure(corpora: list[Path], store: Path) -> dict[str, list[tuple[QueryScores, tuple[str, ...], Any]]]:
    out = {}
    for corpus in corpora:
        index = open_index_for(corpus, store)
        ensure_synced(index, corpus)
        rows = []
        for q in load_qrels(corpus / "qrels.jsonl"):
            pool = frozenset(q.pool) if q.pool is not None else None
            qs = index.score(q.query_text, exclude_paths=frozenset({q.query}), pool=pool)
            head = [c.adr.path for c in fuse(qs.scores, index.fusion)[:40]]
            rows.append((qs, q.relevant, index._similarity(head)))
        out[corpus.name] = rows
        print(f"measured {corpus.name}: {len(rows)} queries", file=sys.stderr, flush=True)
    return out


def score(measured, params: FusionParams, names) -> dict[str, tuple[float, float, float]]:
    groups: dict[str, list] = {"en": [], "ja": []}
    for name in names:
        for qs, relevant, sim in measured[name]:
            r = rank(qs.scores, params, similarity=sim if params.mmr_lambda < 1 else None)
            groups["ja" if name in JA else "en"].append(([c.adr.path for c in r.candidates], relevant))
    out = {}
    for g, pairs in groups.items():
        if pairs:
            m = metrics_of(pairs)
            out[g] = (m.recall_at_5, m.hit_at_5, m.mrr)
    return out


def fmt(s: dict[str, tuple[float, float, float]]) -> str:
    return "  ".join(f"{g.upper()} R@5 {v[0]:.3f} Hit {v[1]:.3f} MRR {v[2]:.3f}" for g, v in s.items())


def objective(s: dict[str, tuple[float, float, float]]) -> float:
    vals = [v for g in s.values() for v in (g[0], g[2])]
    return sum(vals) / len(vals)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--corpora", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora"
    )
    ap.add_argument("--store", type=Path, default=None)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--holdout", action="store_true", help="leave-one-corpus-out check of the chosen knobs")
    args = ap.parse_args()
    corpora = find_corpora(args.corpora)
    store = args.store or Path(tempfile.mkdtemp(prefix="adr-tune-"))
    measured = measure(corpora, store)
    names = [c.name for c in corpora]
    current = fusion_params(RetrievalConfig(), "offline-hash")
    print(f"configured defaults: {current}")
    print(f"  -> {fmt(score(measured, current, names))}")
    best = current
    for stage in STAGES:
        keys = list(stage)
        results = []
        for values in itertools.product(*(stage[k] for k in keys)):
            params = replace(best, **dict(zip(keys, values, strict=True)))
            s = score(measured, params, names)
            results.append((objective(s), values, s, params))
        results.sort(key=lambda r: -r[0])
        print(f"\nstage {' x '.join(keys)} (top {args.top} of {len(results)}):")
        for obj, values, s, _ in results[: args.top]:
            print(
                f"  {obj:.4f}  "
                + "  ".join(f"{k}={v:g}" for k, v in zip(keys, values, strict=True))
                + f"   {fmt(s)}"
            )
        best = results[0][3]
        if args.holdout:
            for held in names:
                rest = [n for n in names if n != held]
                pick = max(results, key=lambda r: objective(score(measured, r[3], rest)))
                print(
                    f"  holdout {held}: chosen on the other corpora {pick[1]} -> {fmt(score(measured, pick[3], [held]))}"
                )
    print(f"\nbest: {best}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
