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
GRID: dict[str, list[Any]] = {
    "dense_weight": [0.15, 0.2, 0.25, 0.3, 0.35],
    "title_weight": [0.1, 0.15, 0.2, 0.25],
    "qualify_cosine": [0.3, 0.35, 0.4, 0.5],
    "qualify_bm25_rel": [0.3, 0.4, 0.5],
    "mmr_lambda": [1.0, 0.9, 0.8],
}


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
    base = FusionParams()
    results = []
    keys = list(GRID)
    for values in itertools.product(*(GRID[k] for k in keys)):
        params = replace(base, **dict(zip(keys, values, strict=True)))
        s = score(measured, params, names)
        results.append((objective(s), values, s))
    results.sort(key=lambda r: -r[0])
    print("objective  " + "  ".join(keys) + "   EN R@5/Hit/MRR   JA R@5/Hit/MRR")
    for obj, values, s in results[: args.top]:
        cols = "  ".join(f"{v:g}" for v in values)
        en, ja = s.get("en", (0, 0, 0)), s.get("ja", (0, 0, 0))
        print(
            f"{obj:.4f}  {cols}   {en[0]:.3f}/{en[1]:.3f}/{en[2]:.3f}   {ja[0]:.3f}/{ja[1]:.3f}/{ja[2]:.3f}"
        )
    default = fusion_params(RetrievalConfig(), "offline-hash")
    s = score(measured, default, names)
    print(f"default {default}: objective {objective(s):.4f} {s}")
    if args.holdout:
        for held in names:
            rest = [n for n in names if n != held]
            best = max(
                results[:50],
                key=lambda r: objective(
                    score(measured, replace(base, **dict(zip(keys, r[1], strict=True))), rest)
                ),
            )
            params = replace(base, **dict(zip(keys, best[1], strict=True)))
            print(f"holdout {held}: knobs {best[1]} -> {score(measured, params, [held])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
