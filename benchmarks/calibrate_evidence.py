"""Fit the calibrated evidence (app/adr_review/core/evidence.py) on corpora with qrels, leave-one-corpus-out.

    .venv/bin/python benchmarks/calibrate_evidence.py --corpora ../shared/corpora            # held-out figures
    .venv/bin/python benchmarks/calibrate_evidence.py --corpora ../shared/corpora --write    # + the shipped model

For every qrels query the product's ranking is computed (the same index, pool and fusion as
`adr-review eval retrieval`), and each of its first five candidates becomes a row: the evidence
features (`features_of`) and whether the proposal cites it. A logistic model is fitted (Newton's
method, L2), then three probability thresholds are chosen on the same rows:

- floor: the highest precision of what is shown with a hit rate (a query with at least one cited ADR
  shown) of at least --hit-en on the English queries and --hit-ja on the Japanese ones;
- high: the lowest threshold at which the rows labelled high are cited at least --high-precision of
  the time (and at least 5 % of the queries get one);
- med: the lowest at which the rows labelled med or high are cited at least half the time.

Leave-one-corpus-out: each corpus is scored with the model and thresholds fitted on the six others;
the pooled held-out figures are the ones to quote. `--write` fits on all corpora and writes
app/adr_review/core/evidence_model.py (figures on those corpora are then in-sample: say so).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adr_review.core.evidence import FEATURES, Background, EvidenceModel, features_of  # noqa: E402
from adr_review.evals.retrieval import find_corpora, load_qrels  # noqa: E402

DEFAULT_FEATURES = FEATURES
K = 5


@dataclass
class Query:
    corpus: str
    language: str
    relevant: int
    rows: list[tuple[dict[str, float], bool]]


@dataclass
class Ranked:
    """One qrels query as the product ranks it: the scores, the ranking and the pool's background."""

    corpus: Path
    adrs: Sequence[Any]  # the folder's parsed ADRs
    language: str  # the folder's majority language
    qrel: Any
    relevant: set[str]
    scores: Any  # index_search.QueryScores
    ranked: Sequence[Any]  # the hybrid ranking's candidates
    background: Background


def ranked_queries(corpora: Sequence[Path], store: Path, top_n: int | None = None) -> Iterator[Ranked]:
    """Every qrels query of every corpus (with a relevant ADR in the folder) through the same index,
    pool and fusion as `adr-review eval retrieval`."""
    from adr_review.adapters.index_open import ensure_synced, open_index_for
    from adr_review.config import RetrievalConfig

    for corpus in corpora:
        index = open_index_for(corpus, store / corpus.name, None, RetrievalConfig())
        synced = ensure_synced(index, corpus)
        known = {a.path for a in synced.adrs}
        language = _majority([a.language for a in synced.adrs])
        for q in load_qrels(corpus / "qrels.jsonl"):
            relevant = {r for r in q.relevant if r in known}
            if not relevant:
                continue
            pool = frozenset(q.pool) if q.pool is not None else None
            qs = index.score(q.query_text, exclude_paths=frozenset({q.query}), pool=pool)
            background = Background.of(
                [s.bm25 for s in qs.scores], [None if qs.dense_failed else s.dense for s in qs.scores]
            )
            ranked = index.rank_scores(qs, top_n=top_n).candidates
            yield Ranked(corpus, synced.adrs, language, q, relevant, qs, ranked, background)


def collect(corpora: Sequence[Path], store: Path) -> list[Query]:
    out: list[Query] = []
    for r in ranked_queries(corpora, store):
        rows = [
            (features_of(c, i, r.background), c.adr.path in r.relevant) for i, c in enumerate(r.ranked[:K])
        ]
        out.append(Query(r.corpus.name, r.language, len(r.relevant), rows))
    for name in dict.fromkeys(q.corpus for q in out):
        print(f"{name}: {sum(1 for q in out if q.corpus == name)} queries", file=sys.stderr)
    return out


def fit(queries: Sequence[Query], features: Sequence[str], l2: float = 1.0) -> EvidenceModel:
    x = np.array([[f[n] for n in features] for q in queries for f, _ in q.rows], dtype=float)
    y = np.array([float(r) for q in queries for _, r in q.rows])
    center, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.c_[np.ones(len(x)), (x - center) / scale]
    w = np.zeros(z.shape[1])
    reg = 2 * l2 * np.eye(len(w))
    reg[0, 0] = 0.0
    for _ in range(100):
        p = 1 / (1 + np.exp(-(z @ w)))
        step = np.linalg.solve((z * (p * (1 - p))[:, None]).T @ z + reg, z.T @ (p - y) + reg @ w)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return EvidenceModel(
        intercept=round(float(w[0]), 6),
        weights={n: round(float(v), 6) for n, v in zip(features, w[1:], strict=True)},
        center={n: round(float(v), 6) for n, v in zip(features, center, strict=True)},
        scale={n: round(float(v), 6) for n, v in zip(features, scale, strict=True)},
        floor=0.0,
        high=1.0,
        med=1.0,
    )


def probabilities(model: EvidenceModel, queries: Sequence[Query]) -> list[list[float]]:
    return [[model.probability(f) for f, _ in q.rows] for q in queries]


def shown_metrics(
    queries: Sequence[Query], probs: Sequence[Sequence[float]], floor: float, high: float, med: float = 2.0
) -> dict[str, float]:
    n = len(queries) or 1
    shown = related = hits = 0
    recall = 0.0
    labels = {"high": [0, 0], "med": [0, 0], "low": [0, 0]}
    for q, ps in zip(queries, probs, strict=True):
        kept = [(r, p) for (_f, r), p in zip(q.rows, ps, strict=True) if p >= floor]
        k = sum(r for r, _ in kept)
        shown += len(kept)
        related += k
        hits += k > 0
        recall += k / q.relevant
        for r, p in kept:
            band = "high" if p >= high else "med" if p >= med else "low"
            labels[band][0] += 1
            labels[band][1] += int(r)
    out = {
        "shown_per_query": shown / n,
        "precision": related / shown if shown else 0.0,
        "hit_rate": hits / n,
        "recall": recall / n,
        "queries": len(queries),
    }
    for band, (count, right) in labels.items():
        out[f"{band}_rows"] = count
        out[f"{band}_precision"] = right / count if count else 0.0
    return out


def thresholds(
    queries: Sequence[Query], probs: Sequence[Sequence[float]], hit: dict[str, float], high_precision: float
) -> tuple[float, float, float]:
    grid = [i / 400 for i in range(0, 400)]
    groups = {
        lang: [(q, p) for q, p in zip(queries, probs, strict=True) if q.language == lang] for lang in hit
    }
    floor, best = 0.0, -1.0
    for t in grid:
        ok = all(
            shown_metrics([q for q, _ in g], [p for _, p in g], t, 2.0)["hit_rate"] >= hit[lang]
            for lang, g in groups.items()
            if g
        )
        if ok:
            m = shown_metrics(queries, probs, t, 2.0)
            if m["precision"] > best:
                floor, best = t, m["precision"]
    high = 1.0
    for t in grid:
        if t < floor:
            continue
        m = shown_metrics(queries, probs, floor, t)
        if m["high_rows"] >= 0.05 * len(queries) and m["high_precision"] >= high_precision:
            high = t
            break
    med = high
    for t in grid:
        if floor <= t <= high:
            m = shown_metrics(queries, probs, t, 2.0)
            if m["precision"] >= 0.5:
                med = t
                break
    return floor, high, med


def with_thresholds(model: EvidenceModel, floor: float, high: float, med: float) -> EvidenceModel:
    from dataclasses import replace

    return replace(model, floor=floor, high=high, med=min(max(med, floor), high))


def fit_with_thresholds(
    queries: Sequence[Query], features: Sequence[str], args: argparse.Namespace
) -> EvidenceModel:
    model = fit(queries, features, args.l2)
    floor, high, med = thresholds(
        queries, probabilities(model, queries), {"en": args.hit_en, "ja": args.hit_ja}, args.high_precision
    )
    return with_thresholds(model, floor, high, med)


def pooled(queries: Sequence[Query], models: dict[str, EvidenceModel]) -> dict[str, float]:
    """Held-out figures of several corpora, each scored by its own fold's model (micro-averaged)."""
    totals: dict[str, float] = {}
    n = 0
    for name, model in models.items():
        qs = [q for q in queries if q.corpus == name]
        m = shown_metrics(qs, probabilities(model, qs), model.floor, model.high, model.med)
        for key, value in m.items():
            if key.endswith("_rows") or key == "queries":
                totals[key] = totals.get(key, 0) + value
        totals["_shown"] = totals.get("_shown", 0) + m["shown_per_query"] * len(qs)
        totals["_related"] = totals.get("_related", 0) + m["precision"] * m["shown_per_query"] * len(qs)
        totals["_hits"] = totals.get("_hits", 0) + m["hit_rate"] * len(qs)
        totals["_recall"] = totals.get("_recall", 0) + m["recall"] * len(qs)
        for band in ("high", "med", "low"):
            totals[f"_{band}_right"] = (
                totals.get(f"_{band}_right", 0) + m[f"{band}_precision"] * m[f"{band}_rows"]
            )
        n += len(qs)
    out = {
        "queries": n,
        "shown_per_query": totals["_shown"] / n,
        "precision": totals["_related"] / totals["_shown"] if totals["_shown"] else 0.0,
        "hit_rate": totals["_hits"] / n,
        "recall": totals["_recall"] / n,
    }
    for band in ("high", "med", "low"):
        rows = totals.get(f"{band}_rows", 0)
        out[f"{band}_rows"] = rows
        out[f"{band}_precision"] = totals[f"_{band}_right"] / rows if rows else 0.0
    return out


def write_model(
    model: EvidenceModel,
    path: Path,
    note: str,
    *,
    name: str = "DEFAULT_EVIDENCE",
    what: str = "The shipped evidence model",
    script: str = "benchmarks/calibrate_evidence.py",
) -> None:
    body = (
        f'"""{what}: written by {script} --write; do not edit.\n\n'
        f"{note}\n"
        '"""\n\n'
        "from adr_review.core.evidence import EvidenceModel\n\n"
        f"{name} = EvidenceModel(\n"
        f"    intercept={model.intercept!r},\n"
        f"    weights={dict(model.weights)!r},\n"
        f"    center={dict(model.center)!r},\n"
        f"    scale={dict(model.scale)!r},\n"
        f"    floor={model.floor!r},\n"
        f"    high={model.high!r},\n"
        f"    med={model.med!r},\n"
        ")\n"
    )
    path.write_text(body, encoding="utf-8")


def _majority(values: Sequence[str]) -> str:
    from collections import Counter

    return Counter(values).most_common(1)[0][0] if values else "?"


def _fmt(m: dict[str, float]) -> str:
    return (
        f"{m['queries']:>4} q  shown/q {m['shown_per_query']:.2f}  precision {m['precision']:.3f}  "
        f"hit {m['hit_rate']:.3f}  recall {m['recall']:.3f}  high {m['high_precision']:.3f} "
        f"({int(m['high_rows'])})  med {m['med_precision']:.3f} ({int(m['med_rows'])})  "
        f"low {m['low_precision']:.3f} ({int(m['low_rows'])})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpora", type=Path, required=True)
    parser.add_argument("--store", type=Path, default=None, help="index folder (default: a temporary one)")
    parser.add_argument("--features", default=",".join(DEFAULT_FEATURES))
    parser.add_argument("--hit-en", type=float, default=0.82)
    parser.add_argument("--hit-ja", type=float, default=0.87)
    parser.add_argument("--high-precision", type=float, default=0.75)
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument(
        "--rows", type=Path, help="cache of the collected rows (JSON): read if present, else written"
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="fit on all corpora and write app/adr_review/core/evidence_model.py",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    features = [f.strip() for f in args.features.split(",") if f.strip()]
    if args.rows and args.rows.is_file():
        queries = [Query(**q) for q in json.loads(args.rows.read_text(encoding="utf-8"))]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            queries = collect(find_corpora(args.corpora), args.store or Path(tmp))
        if args.rows:
            args.rows.write_text(json.dumps([q.__dict__ for q in queries]), encoding="utf-8")
    names = sorted({q.corpus for q in queries})
    models = {}
    report: dict[str, object] = {"features": features, "folds": {}}
    for held in names:
        train = [q for q in queries if q.corpus != held]
        model = fit_with_thresholds(train, features, args)
        models[held] = model
        test = [q for q in queries if q.corpus == held]
        m = shown_metrics(test, probabilities(model, test), model.floor, model.high, model.med)
        report["folds"][held] = {"floor": model.floor, "high": model.high, "med": model.med, **m}  # type: ignore[index]
        if not args.json:
            print(f"{held:<40} floor {model.floor:.3f} med {model.med:.3f} high {model.high:.3f}  {_fmt(m)}")
    for label, lang in (("English", "en"), ("Japanese", "ja")):
        group = {n: models[n] for n in names if any(q.corpus == n and q.language == lang for q in queries)}
        if group:
            m = pooled(queries, group)
            report[label] = m
            if not args.json:
                print(f"held-out, {label:<30} {_fmt(m)}")
    if args.write:
        model = fit_with_thresholds(queries, features, args)
        note = (
            f"Fitted on {len(queries)} qrels queries of {len(names)} corpora ({', '.join(names)}), "
            f"features {', '.join(features)}; floor chosen for a hit rate >= {args.hit_en} (English) / "
            f"{args.hit_ja} (Japanese), high for a precision >= {args.high_precision}. Held-out "
            "(leave-one-corpus-out) figures: docs/benchmarks.md."
        )
        write_model(model, ROOT / "app" / "adr_review" / "core" / "evidence_model.py", note)
        for label, lang in (("English", "en"), ("Japanese", "ja")):
            qs = [q for q in queries if q.language == lang]
            if qs and not args.json:
                print(
                    f"in-sample (shipped model), {label:<14} {_fmt(shown_metrics(qs, probabilities(model, qs), model.floor, model.high, model.med))}"
                )
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
