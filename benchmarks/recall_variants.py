"""Recall-quality experiments of issue 18 (part 3): the scoring re-implemented with variant switches.

    .venv/bin/python benchmarks/recall_variants.py --corpora ../shared/corpora --store /tmp/rv \
        'V()' 'V(dense="top2")' 'V(tok="tokenize", indeg=0.03)' [--loco]

Not product code: an exploration tool. `V()` reproduces `adr-review eval retrieval` (hybrid, default
knobs, offline-hash); every other V changes one thing (see the fields). `--loco`: for each corpus, the
variant with the best objective (mean of Recall@5 and MRR per language) on the *other* corpora is
the one that scores it; the held-out runs are pooled per language. Figures: docs/benchmarks.md.
Needs the indexes in --store (built on first use, like eval retrieval).
"""

from __future__ import annotations

import sys
from pathlib import Path

from recall_variants_corpus import Corpus, V

from adr_review.evals.retrieval import find_corpora, metrics_of

JA = "kompiro__karasu"
CORPORA = Path("../shared/corpora")


def load(corpora: Path, store: Path) -> list[Corpus]:
    return [Corpus(p, store) for p in find_corpora(corpora)]


def lang_metrics(results: dict[str, list]):
    en = [p for n, ps in results.items() if n != JA for p in ps]
    ja = results.get(JA, [])
    return metrics_of(en), metrics_of(ja)


def obj(m_en, m_ja):
    vals = []
    for m in (m_en, m_ja):
        if m.queries:
            vals += [m.recall_at_5, m.mrr]
    return sum(vals) / len(vals)


def fmt(m_en, m_ja):
    return f"EN {m_en.recall_at_5:.3f}/{m_en.hit_at_5:.3f}/{m_en.mrr:.3f}  JA {m_ja.recall_at_5:.3f}/{m_ja.hit_at_5:.3f}/{m_ja.mrr:.3f}"


_RUNS: dict = {}


def evaluate(corpora, v: V, cache=_RUNS):
    key = v
    if key not in cache:
        cache[key] = {c.name: c.run(v) for c in corpora}
    return cache[key]


def loco(corpora, variants):
    """For each held-out corpus choose the variant with the best objective on the others; report the
    held-out runs pooled."""
    res = {v: evaluate(corpora, v) for v in variants}
    held = {}
    choice = {}
    for c in corpora:
        best = max(
            variants,
            key=lambda v: obj(*lang_metrics({n: p for n, p in res[v].items() if n != c.name})),
        )
        choice[c.name] = best
        held[c.name] = res[best][c.name]
    return held, choice


def per_corpus(res):
    return {n: metrics_of(p) for n, p in res.items()}


def describe(v: V) -> str:
    return str({k: val for k, val in v.__dict__.items() if val != getattr(V(), k)} or "V()")


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="+", help="V(...) expressions; the first is the reference")
    ap.add_argument("--corpora", type=Path, default=CORPORA)
    ap.add_argument("--store", type=Path, default=Path(".adr-review-variants"))
    ap.add_argument("--loco", action="store_true")
    args = ap.parse_args()
    corpora = load(args.corpora, args.store)
    family = [eval(x, {"V": V}) for x in args.variants]  # noqa: S307 - a local experiment CLI
    for v in family:
        en, ja = lang_metrics(evaluate(corpora, v))
        print(f"  {describe(v)}  {fmt(en, ja)}  objective {obj(en, ja):.4f}", flush=True)
    if args.loco:
        held, choice = loco(corpora, family)
        en, ja = lang_metrics(held)
        print(f"LOCO pooled: {fmt(en, ja)}  objective {obj(en, ja):.4f}")
        for name, v in choice.items():
            m = metrics_of(held[name])
            print(f"   {name}: chosen {describe(v)} -> R@5 {m.recall_at_5:.3f} MRR {m.mrr:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
