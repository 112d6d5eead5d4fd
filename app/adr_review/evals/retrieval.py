"""Score retrieval on a corpus with `qrels.jsonl` (format: shared corpora README).

For every query: search with `query_text`, candidates restricted to `pool` (the ADRs that existed when
the proposal was written), take the ranked list and score it against `relevant`:

- Recall@5: share of the relevant ADRs in the top 5, averaged over queries;
- Hit@5: share of queries with at least one relevant ADR in the top 5;
- MRR: mean reciprocal rank of the first relevant ADR within the returned list (top_n, default 20).

Aggregates over several corpora are micro-averaged: every query counts once, whatever its corpus.
Three retrievers come from one measurement per query: BM25 alone, dense alone (best-chunk cosine)
and the default hybrid pipeline (fusion + qualification + MMR, exactly what `recall` runs).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adr_review.core.evidence import eligible
from adr_review.core.evidence_model import DEFAULT_EVIDENCE

if TYPE_CHECKING:
    from adr_review.adapters.index import ChromaAdrIndex

RETRIEVERS = ("bm25", "dense", "hybrid")
K = 5


@dataclass(frozen=True)
class Qrel:
    query: str  # path of the ADR playing the proposal
    query_text: str
    relevant: tuple[str, ...]
    pool: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Metrics:
    recall_at_5: float
    hit_at_5: float
    mrr: float
    queries: int

    def to_json(self) -> dict[str, float | int]:
        return {
            "recall@5": round(self.recall_at_5, 4),
            "hit@5": round(self.hit_at_5, 4),
            "mrr": round(self.mrr, 4),
            "queries": self.queries,
        }


@dataclass(frozen=True)
class QueryRun:
    """One query's ranked lists, kept so reports can be aggregated across corpora."""

    qrel: Qrel
    ranked: Mapping[str, tuple[str, ...]]  # retriever -> ranked paths
    shown: tuple[tuple[str, str], ...] = ()  # (path, label) of the rows the comment shows


@dataclass(frozen=True)
class CorpusReport:
    name: str
    runs: tuple[QueryRun, ...]
    embedding: str
    adrs: int
    language: str = "?"  # the language most of the folder's ADRs are written in
    parse_errors: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # qrels whose query or relevant ADRs are not in the folder
    timings: Mapping[str, float] = field(default_factory=dict)

    def metrics(self) -> dict[str, Metrics]:
        return aggregate([self])


def load_qrels(path: Path) -> list[Qrel]:
    out: list[Qrel] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise TypeError(f"a JSON object per line, not {type(raw).__name__}")
            pool = raw.get("pool")
            out.append(
                Qrel(
                    query=str(raw["query"]),
                    query_text=str(raw["query_text"]),
                    relevant=tuple(str(r) for r in raw["relevant"]),
                    pool=tuple(str(p) for p in pool) if pool is not None else None,
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: not a qrels line ({exc})") from None
    return out


def recall_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int = K) -> float:
    rel = set(relevant)
    return len(rel & set(ranked[:k])) / len(rel) if rel else 0.0


def hit_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int = K) -> float:
    return 1.0 if set(relevant) & set(ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Iterable[str]) -> float:
    rel = set(relevant)
    return next((1.0 / (i + 1) for i, p in enumerate(ranked) if p in rel), 0.0)


def metrics_of(pairs: Sequence[tuple[Sequence[str], Sequence[str]]]) -> Metrics:
    """(ranked, relevant) per query -> averaged metrics."""
    n = len(pairs)
    if n == 0:
        return Metrics(0.0, 0.0, 0.0, 0)
    return Metrics(
        recall_at_5=sum(recall_at_k(r, rel) for r, rel in pairs) / n,
        hit_at_5=sum(hit_at_k(r, rel) for r, rel in pairs) / n,
        mrr=sum(reciprocal_rank(r, rel) for r, rel in pairs) / n,
        queries=n,
    )


@dataclass(frozen=True)
class ShownMetrics:
    """What the comment shows, scored against the qrels (micro-averaged over queries and rows)."""

    queries: int
    shown_per_query: float
    precision: float  # shown rows that are relevant
    hit_rate: float  # queries with at least one relevant row shown
    recall: float  # share of a query's relevant ADRs shown, averaged
    labels: Mapping[str, tuple[int, float]]  # label -> (rows, precision)

    def to_json(self) -> dict[str, Any]:
        return {
            "queries": self.queries,
            "shown_per_query": round(self.shown_per_query, 4),
            "precision": round(self.precision, 4),
            "hit_rate": round(self.hit_rate, 4),
            "recall": round(self.recall, 4),
            "labels": {k: {"rows": n, "precision": round(p, 4)} for k, (n, p) in self.labels.items()},
        }


def shown_metrics(runs: Sequence[QueryRun]) -> ShownMetrics:
    n = len(runs)
    rows = [(path in set(run.qrel.relevant), label) for run in runs for path, label in run.shown]
    hits = sum(1 for run in runs if set(run.qrel.relevant) & {p for p, _ in run.shown})
    recall = sum(
        len(set(run.qrel.relevant) & {p for p, _ in run.shown}) / len(run.qrel.relevant) for run in runs
    )
    labels = {}
    for label in ("high", "med", "low"):
        of_label = [rel for rel, lab in rows if lab == label]
        labels[label] = (len(of_label), sum(of_label) / len(of_label) if of_label else 0.0)
    return ShownMetrics(
        queries=n,
        shown_per_query=len(rows) / n if n else 0.0,
        precision=sum(rel for rel, _ in rows) / len(rows) if rows else 0.0,
        hit_rate=hits / n if n else 0.0,
        recall=recall / n if n else 0.0,
        labels=labels,
    )


def aggregate_shown(reports: Sequence[CorpusReport]) -> ShownMetrics:
    return shown_metrics([run for rep in reports for run in rep.runs])


def aggregate(reports: Sequence[CorpusReport]) -> dict[str, Metrics]:
    """Micro-average: every query of every report once."""
    out: dict[str, Metrics] = {}
    for name in RETRIEVERS:
        pairs = [
            (run.ranked[name], run.qrel.relevant) for rep in reports for run in rep.runs if name in run.ranked
        ]
        out[name] = metrics_of(pairs)
    return out


def rank_runs(index: ChromaAdrIndex, qrels: Sequence[Qrel], top_n: int) -> tuple[list[QueryRun], list[str]]:
    """Measure every query once, rank it three ways."""
    known = {a.path for a in index.adrs}
    runs: list[QueryRun] = []
    skipped: list[str] = []
    for q in qrels:
        relevant = tuple(r for r in q.relevant if r in known)
        if not relevant:
            skipped.append(f"{q.query}: none of its relevant ADRs is in the folder")
            continue
        pool = frozenset(q.pool) if q.pool is not None else None
        qs = index.score(q.query_text, exclude_paths=frozenset({q.query}), pool=pool)
        by_bm25 = sorted(qs.scores, key=lambda s: (-s.bm25, s.adr.path))
        by_dense = sorted(qs.scores, key=lambda s: (-(s.dense if s.dense is not None else -2.0), s.adr.path))
        hybrid = index.rank_scores(qs, top_n=top_n)
        ranked = {
            "bm25": tuple(s.adr.path for s in by_bm25 if s.bm25 > 0)[:top_n],
            "dense": tuple(s.adr.path for s in by_dense if s.dense is not None)[:top_n],
            "hybrid": tuple(c.adr.path for c in hybrid.candidates),
        }
        shown = tuple(
            (hybrid.candidates[i].adr.path, label)
            for i, label in eligible(hybrid.candidates, DEFAULT_EVIDENCE)
        )[:K]
        runs.append(QueryRun(Qrel(q.query, q.query_text, relevant, q.pool), ranked, shown))
    return runs, skipped


def evaluate_corpus(
    corpus: Path,
    *,
    qrels_path: Path | None = None,
    store_dir: Path,
    embedding: str | None = None,
    config: Any = None,
    progress: Any = None,
) -> CorpusReport:
    """Index the folder (incrementally, in store_dir) and score every qrels query."""
    import time

    from adr_review.adapters.index_open import ensure_synced, open_index_for

    qrels = load_qrels(qrels_path or corpus / "qrels.jsonl")
    index = open_index_for(corpus, store_dir, embedding, config)
    t0 = time.perf_counter()
    synced = ensure_synced(index, corpus, progress=progress)
    t1 = time.perf_counter()
    runs, skipped = rank_runs(index, qrels, index.fusion.top_n)
    t2 = time.perf_counter()
    return CorpusReport(
        name=corpus.name,
        runs=tuple(runs),
        embedding=index.embedding,
        adrs=len(synced.adrs),
        language=_majority_language(synced.adrs),
        parse_errors=tuple(f"{e.path}: {e.reason}" for e in synced.parse_errors) + synced.report.errors,
        skipped=tuple(skipped),
        timings={"index_s": round(t1 - t0, 3), "queries_s": round(t2 - t1, 3)},
    )


def find_corpora(root: Path) -> list[Path]:
    """`root` itself when it has a qrels.jsonl, else its sub-folders that do (sorted)."""
    if (root / "qrels.jsonl").is_file():
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "qrels.jsonl").is_file())


def report_json(reports: Sequence[CorpusReport]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "retrievers": {k: m.to_json() for k, m in aggregate(reports).items()},
        "shown": aggregate_shown(reports).to_json(),
        "embedding": reports[0].embedding if reports else None,
    }
    if len(reports) > 1:
        out["corpora"] = {
            r.name: {
                "retrievers": {k: m.to_json() for k, m in r.metrics().items()},
                "shown": aggregate_shown([r]).to_json(),
                "adrs": r.adrs,
                "language": r.language,
            }
            for r in reports
        }
    return out


def _majority_language(adrs: Sequence[Any]) -> str:
    from collections import Counter

    counts = Counter(a.language for a in adrs)
    return counts.most_common(1)[0][0] if counts else "?"
