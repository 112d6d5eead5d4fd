"""Sweep the fusion knobs on every corpus at once and print the aggregate table (how defaults were chosen).

    .venv/bin/python benchmarks/tune_fusion.py [--corpora ../shared/corpora] [--store DIR] [--top 15]

Each query is measured once (BM25, title coverage, best-chunk cosine); every knob combination then
re-ranks those measurements with the pure fusion (adr_review.core.fusion.rank). The objective is the mean
of Recall@5 and MRR over the English queries (micro-averaged over the six English corpora) and over
the Japanese ones, so neither language dominates.

Stages: (1) the fusion weights, picked by the objective averaged over each grid point and its
neighbours (the middle of a plateau, not a lucky peak); (2) the OR-gate thresholds, picked by how well
"qualified" separates relevant from other candidates in the top 20 (Youden's J: relevant passing minus
others passing) among the gates that do not cost ranking quality (qualified candidates are listed
first, so a strict gate can push relevant fill-ins down); (3) MMR's lambda: the most diversity that
costs no ranking quality. Nothing is
tuned per corpus or per query: `--holdout` shows what each corpus scores with the weights chosen on
the *other* corpora.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from adr_review.adapters.index import QueryScores
from adr_review.adapters.index_open import ensure_synced, fusion_params, open_index_for
from adr_review.config import RetrievalConfig
from adr_review.core.adr import parse_adr
from adr_review.core.fusion import FusionParams, fuse, rank
from adr_review.core.recall_query import recall_query
from adr_review.evals.retrieval import find_corpora, load_qrels, metrics_of

JA = {"kompiro__karasu"}
# Swept in stages (weights, then the gate, then MMR), each keeping the choice of the previous one:
# a full cross product is ~1000 re-rankings of 321 queries, too slow for a shared 2-core machine.
WEIGHTS: dict[str, list[float]] = {
    "dense_weight": [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4],
    "title_weight": [0.0, 0.1, 0.15, 0.2, 0.25, 0.3],
}
GATE: dict[str, list[float]] = {
    "qualify_cosine": [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5],
    "qualify_bm25_rel": [0.2, 0.3, 0.4, 0.5, 0.6],
}
MMR = [1.0, 0.95, 0.9, 0.8, 0.7]
TEMPERATURES = [0.0, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04]  # dense chunk pooling (--temperatures)
TOLERANCE = 0.002  # objective points: differences below this are noise at 321 queries


def measure(
    corpora: list[Path], store: Path, *, temperature: float | None = None, query: str = "whole"
) -> dict[str, list[tuple[QueryScores, tuple[str, ...], Any]]]:
    """Every query scored once. `temperature`: the dense chunk pooling (None: the configured default);
    `query`: "whole" (the masked text, as the product searches) or "sections" (title + context +
    decision + options of the parsed text: recall_query, the product's query before issue 18)."""
    out = {}
    for corpus in corpora:
        index = open_index_for(corpus, store)
        ensure_synced(index, corpus)
        if temperature is not None:
            index.dense_temperature = temperature
        rows = []
        for q in load_qrels(corpus / "qrels.jsonl"):
            pool = frozenset(q.pool) if q.pool is not None else None
            text = q.query_text
            if query == "sections":
                text = recall_query(parse_adr(q.query, q.query_text.encode("utf-8")))
            qs = index.score(text, exclude_paths=frozenset({q.query}), pool=pool)
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


def score_each(
    rows: dict[str, list[tuple[QueryScores, tuple[str, ...], Any, FusionParams]]],
) -> dict[str, Any]:
    """Like score, but every query ranked with its own parameters (the held-out corpus's choice)."""
    groups: dict[str, list] = {"en": [], "ja": []}
    for name, items in rows.items():
        for qs, relevant, _sim, params in items:
            r = rank(qs.scores, params)
            groups["ja" if name in JA else "en"].append(([c.adr.path for c in r.candidates], relevant))
    return {
        g: (m.recall_at_5, m.hit_at_5, m.mrr)
        for g, pairs in groups.items()
        if pairs
        for m in [metrics_of(pairs)]
    }


def fmt(s: dict[str, tuple[float, float, float]]) -> str:
    return "  ".join(f"{g.upper()} R@5 {v[0]:.3f} Hit {v[1]:.3f} MRR {v[2]:.3f}" for g, v in s.items())


def no_cost(s: dict[str, tuple[float, float, float]], base: dict[str, tuple[float, float, float]]) -> bool:
    """Every language's Recall@5 and MRR within TOLERANCE of the reference ranking's."""
    return all(s[g][m] >= base[g][m] - TOLERANCE for g in base for m in (0, 2))


def objective(s: dict[str, tuple[float, float, float]]) -> float:
    vals = [v for g in s.values() for v in (g[0], g[2])]
    return sum(vals) / len(vals)


def sweep_temperatures(corpora: list[Path], store: Path, holdout: bool, query: str) -> int:
    """dense_temperature at the default weights; --holdout: the value chosen on the other corpora
    (best objective) scores the held-out one, and the held-out runs are pooled per language."""
    names = [c.name for c in corpora]
    params = fusion_params(RetrievalConfig(), "offline-hash")
    runs = {t: measure(corpora, store, temperature=t, query=query) for t in TEMPERATURES}
    for t in TEMPERATURES:
        s = score(runs[t], params, names)
        print(f"  {objective(s):.4f}  dense_temperature={t:g}   {fmt(s)}")
    if not holdout:
        return 0
    pooled: dict[str, Any] = {}
    for held in names:
        rest = [n for n in names if n != held]
        t = max(TEMPERATURES, key=lambda t: objective(score(runs[t], params, rest)))
        pooled[held] = runs[t][held]
        print(
            f"  holdout {held}: dense_temperature chosen on the other corpora {t:g} -> {fmt(score(runs[t], params, [held]))}"
        )
    print(f"  holdout, pooled per language: {fmt(score(pooled, params, names))}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--corpora", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora"
    )
    ap.add_argument("--store", type=Path, default=None)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--holdout", action="store_true", help="leave-one-corpus-out check of the chosen knobs")
    ap.add_argument(
        "--temperatures",
        action="store_true",
        help="only sweep dense_temperature (default weights), with --holdout leave-one-corpus-out",
    )
    ap.add_argument(
        "--query", choices=["whole", "sections"], default="whole", help="what the query is (see measure)"
    )
    args = ap.parse_args()
    corpora = find_corpora(args.corpora)
    store = args.store or Path(tempfile.mkdtemp(prefix="adr-tune-"))
    if args.temperatures:
        return sweep_temperatures(corpora, store, args.holdout, args.query)
    measured = measure(corpora, store)
    names = [c.name for c in corpora]
    current = fusion_params(RetrievalConfig(), "offline-hash")
    print(f"configured defaults: {current}")
    print(f"  -> {fmt(score(measured, current, names))}")

    # 1. weights, smoothed over grid neighbours
    dws, tws = WEIGHTS["dense_weight"], WEIGHTS["title_weight"]
    grid: dict[tuple[int, int], tuple[float, dict[str, tuple[float, float, float]]]] = {}
    for i, dw in enumerate(dws):
        for j, tw in enumerate(tws):
            s = score(measured, replace(current, dense_weight=dw, title_weight=tw), names)
            grid[(i, j)] = (objective(s), s)

    def smoothed(key: tuple[int, int], cells: dict[tuple[int, int], float]) -> float:
        i, j = key
        near = [cells[(a, b)] for a in (i - 1, i, i + 1) for b in (j - 1, j, j + 1) if (a, b) in cells]
        return sum(near) / len(near)

    objs = {k: v[0] for k, v in grid.items()}
    ranked = sorted(grid, key=lambda k: -smoothed(k, objs))
    print(f"\nstage 1: dense_weight x title_weight (top {args.top} of {len(grid)} by neighbourhood mean)")
    for i, j in ranked[: args.top]:
        print(
            f"  {smoothed((i, j), objs):.4f} (own {objs[(i, j)]:.4f})  dense_weight={dws[i]:g} title_weight={tws[j]:g}   {fmt(grid[(i, j)][1])}"
        )
    no_title = max((k for k in grid if tws[k[1]] == 0.0), key=lambda k: objs[k], default=None)
    if no_title is not None:
        i, j = no_title
        print(
            f"  without title coverage, best: {objs[no_title]:.4f}  dense_weight={dws[i]:g}   {fmt(grid[no_title][1])}"
        )
    bi, bj = ranked[0]
    best = replace(current, dense_weight=dws[bi], title_weight=tws[bj])
    if args.holdout:
        pooled: dict[str, Any] = {}
        for held in names:
            rest = [n for n in names if n != held]
            cells = {
                (i, j): objective(
                    score(measured, replace(current, dense_weight=dws[i], title_weight=tws[j]), rest)
                )
                for i in range(len(dws))
                for j in range(len(tws))
            }
            hi, hj = max(cells, key=lambda k: smoothed(k, cells))
            chosen = replace(current, dense_weight=dws[hi], title_weight=tws[hj])
            print(
                f"  holdout {held}: weights chosen on the other corpora ({dws[hi]:g}, {tws[hj]:g}) -> {fmt(score(measured, chosen, [held]))}"
            )
            pooled[held] = [(qs, rel, sim, chosen) for qs, rel, sim in measured[held]]
        print(f"  holdout, pooled per language: {fmt(score_each(pooled))}")

    # 2. the gate: separation of relevant and other candidates among the top 20, at no ranking cost
    base = score(measured, best, names)
    print(
        f"\nstage 2: qualify_cosine x qualify_bm25_rel (Youden's J over the top-20 candidates; "
        f"only gates that keep every R@5 and MRR within {TOLERANCE} of the ungated ranking)"
    )
    rows = []
    for qc in GATE["qualify_cosine"]:
        for qb in GATE["qualify_bm25_rel"]:
            params = replace(best, qualify_cosine=qc, qualify_bm25_rel=qb)
            rel_pass = rel_all = other_pass = other_all = 0
            for name in names:
                for qs, relevant, _sim in measured[name]:
                    for c in rank(qs.scores, params).candidates:
                        if c.adr.path in relevant:
                            rel_all += 1
                            rel_pass += c.qualified
                        else:
                            other_all += 1
                            other_pass += c.qualified
            tpr, fpr = rel_pass / max(rel_all, 1), other_pass / max(other_all, 1)
            got = score(measured, params, names)
            rows.append((tpr - fpr, qc, qb, tpr, fpr, objective(got), no_cost(got, base)))
    rows.sort(key=lambda r: -r[0])
    for j_stat, qc, qb, tpr, fpr, obj, free in rows[: args.top * 2]:
        ok = "ok  " if free else "cost"
        print(
            f"  J {j_stat:.3f}  qualify_cosine={qc:g} qualify_bm25_rel={qb:g}   relevant qualified {tpr:.3f}, "
            f"others qualified {fpr:.3f}   objective {obj:.4f} {ok}"
        )
    pick = next(r for r in rows if r[6])
    best = replace(best, qualify_cosine=pick[1], qualify_bm25_rel=pick[2])
    print(
        f"  -> qualify_cosine={pick[1]:g} qualify_bm25_rel={pick[2]:g}: {fmt(score(measured, best, names))}"
    )

    # 3. MMR: the most diversity that costs no more than the tolerance
    print(
        f"\nstage 3: mmr_lambda (the lowest lambda keeping every R@5 and MRR within {TOLERANCE} of lambda=1)"
    )
    mmr_rows = [
        (objective(s), lam, s) for lam in MMR for s in [score(measured, replace(best, mmr_lambda=lam), names)]
    ]
    for obj, lam, s in mmr_rows:
        print(f"  {obj:.4f}  mmr_lambda={lam:g}   {fmt(s)}")
    plain = next(s for _obj, lam, s in mmr_rows if lam == 1.0)
    best = replace(best, mmr_lambda=min(lam for _obj, lam, s in mmr_rows if no_cost(s, plain)))
    print(f"\nbest: {best}")
    print(f"  -> {fmt(score(measured, best, names))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
