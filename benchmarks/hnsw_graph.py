"""What an HNSW setting costs a cold index and what graph it leaves, on a folder's real chunk vectors.

No search of adr-review reads Chroma's graph (dense scores are exact, over the index mirror); the
graph serves other clients of the collection. So a new collection's HNSW setting trades insert CPU
(most of a cold index's store write) against the graph's quality for them. For each setting this
inserts the folder's chunk vectors (the product's chunking and offline embedder, 512 per call as
the index does) into a fresh embedded collection, and prints the insert's wall and CPU seconds
(median of --runs) and the graph's recall@10 for --queries of the stored vectors as queries, against
exact cosine neighbours.

    .venv/bin/python benchmarks/hnsw_graph.py --adr-dir /tmp/bench-q/n644/adr --settings 32/8 8/8
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def chunk_vectors(folder: Path) -> np.ndarray:
    from adr_review.adapters.adr_files import load_adr_folder
    from adr_review.adapters.embeddings import OfflineHashEmbedding, embed_texts
    from adr_review.adapters.index_prep import pieces_of
    from adr_review.core.chunking import ChunkParams

    adrs, _errors = load_adr_folder(folder)
    ef, params = OfflineHashEmbedding(), ChunkParams()
    return np.concatenate([embed_texts(ef, pieces_of(a, params)) for a in adrs])


def insert(vectors: np.ndarray, ef: int, m: int) -> tuple[float, float, object]:
    import chromadb

    client = chromadb.PersistentClient(path=tempfile.mkdtemp(prefix="hnsw-"))
    col = client.create_collection(
        "hnsw-bench",
        configuration={"hnsw": {"space": "cosine", "ef_construction": ef, "max_neighbors": m}},
        embedding_function=None,
    )
    wall, cpu = time.perf_counter(), time.process_time()
    for lo in range(0, len(vectors), 512):
        hi = min(lo + 512, len(vectors))
        col.upsert(ids=[str(i) for i in range(lo, hi)], embeddings=vectors[lo:hi])
    return time.perf_counter() - wall, time.process_time() - cpu, col


def graph_recall(col: object, vectors: np.ndarray, queries: int, k: int = 10) -> float:
    rng = np.random.default_rng(0)
    picks = rng.choice(len(vectors), size=min(queries, len(vectors)), replace=False)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    got = col.query(query_embeddings=vectors[picks], n_results=k)  # type: ignore[attr-defined]
    hits = 0
    for row, q in enumerate(picks):
        exact = set(np.argsort(-(unit @ unit[q]), kind="stable")[:k].tolist())
        hits += len(exact & {int(i) for i in got["ids"][row]})
    return hits / (k * len(picks))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adr-dir", type=Path, required=True)
    ap.add_argument("--settings", nargs="+", default=["32/8", "8/8"], help="ef_construction/max_neighbors")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    vectors = chunk_vectors(args.adr_dir)
    print(f"{len(vectors)} chunk vectors of {vectors.shape[1]} dimensions from {args.adr_dir}")
    print("| ef_construction / max_neighbors | insert wall s (median) | insert CPU s (median) | recall@10 |")
    print("|---|---|---|---|")
    results: dict[str, list[tuple[float, float, float]]] = {s: [] for s in args.settings}
    for _run in range(args.runs):  # interleaved: the machine's speed moves between minutes
        for setting in args.settings:
            ef, m = (int(x) for x in setting.split("/"))
            wall, cpu, col = insert(vectors, ef, m)
            results[setting].append((wall, cpu, graph_recall(col, vectors, args.queries)))
    for setting, rows in results.items():
        wall = statistics.median(r[0] for r in rows)
        cpu = statistics.median(r[1] for r in rows)
        recall = statistics.median(r[2] for r in rows)
        print(f"| {setting} | {wall:.2f} | {cpu:.2f} | {recall:.3f} |")


if __name__ == "__main__":
    main()
