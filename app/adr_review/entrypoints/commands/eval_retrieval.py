"""`adr-review eval retrieval --corpus DIR [--qrels FILE] [--json] [--store DIR] [--embedding NAME]`

Scores BM25 alone, dense alone and the default hybrid pipeline on a folder of ADRs with a
`qrels.jsonl` (see app/adr_review/evals/retrieval.py for the metrics). DIR may also be a folder of such corpora:
each is scored, then all queries are micro-averaged (overall and per ADR language). The index goes to
a temporary folder unless --store is given (then it is reused incrementally).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from adr_review.entrypoints.commands.common import add_index_arguments, retrieval_config, setup_logging

if TYPE_CHECKING:
    from adr_review.evals.retrieval import CorpusReport, Metrics, ShownMetrics

PROG = "adr-review eval retrieval"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--corpus", type=Path, required=True, help="ADR folder with qrels.jsonl, or a folder of them"
    )
    parser.add_argument("--qrels", type=Path, default=None, help="qrels file (default: CORPUS/qrels.jsonl)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_index_arguments(
        parser,
        adr_dir_required=False,
        store_help="keep the indexes here and reuse them incrementally (default: a temporary folder)",
    )


def run(args: argparse.Namespace) -> int:
    setup_logging()
    from adr_review.entrypoints.errors import error_text
    from adr_review.evals.retrieval import (
        aggregate,
        aggregate_shown,
        evaluate_corpus,
        find_corpora,
        report_json,
    )
    from adr_review.pipeline.ports import IndexStoreError

    if not args.corpus.is_dir():
        print(f"{PROG}: {args.corpus}: not a folder", file=sys.stderr)
        return 2
    try:
        config = retrieval_config(args)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    corpora = [args.corpus] if args.qrels else find_corpora(args.corpus)
    if not corpora:
        print(f"{PROG}: {args.corpus}: no qrels.jsonl here or in its sub-folders", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="adr-review-eval-") as tmp:
        store = Path(args.store) if args.store else Path(tmp)
        reports: list[CorpusReport] = []
        languages: dict[str, str] = {}
        failed: list[str] = []
        for corpus in corpora:
            try:
                rep = evaluate_corpus(
                    corpus, qrels_path=args.qrels, store_dir=store, embedding=args.embedding, config=config
                )
            except (OSError, ValueError, IndexStoreError) as exc:
                # one unusable corpus of many is skipped (and fails the run), the others are scored
                print(f"{PROG}: {corpus}: {error_text(exc)}", file=sys.stderr)
                failed.append(corpus.name)
                continue
            for err in rep.parse_errors:
                print(f"{PROG}: {corpus.name}: warning: {err}", file=sys.stderr)
            for skip in rep.skipped:
                print(f"{PROG}: {corpus.name}: skipped query {skip}", file=sys.stderr)
            languages[rep.name] = rep.language
            reports.append(rep)
    if not reports:
        return 2 if len(corpora) == 1 else 1
    if failed:
        print(f"{PROG}: not scored: {', '.join(failed)}", file=sys.stderr)
    status = 1 if failed else 0
    by_language = {
        lang: aggregate([r for r in reports if languages[r.name] == lang])
        for lang in sorted(set(languages.values()))
    }
    if args.json:
        payload = report_json(reports)
        if len(reports) > 1:
            payload["by_language"] = {
                lang: {k: m.to_json() for k, m in metrics.items()} for lang, metrics in by_language.items()
            }
            payload["shown_by_language"] = {
                lang: aggregate_shown([r for r in reports if languages[r.name] == lang]).to_json()
                for lang in by_language
            }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return status
    print(f"embedding: {reports[0].embedding}   (Recall@5 / Hit@5 / MRR, queries)")
    rows: list[tuple[str, dict[str, Metrics]]] = [
        (f"{r.name} [{languages[r.name]}]", r.metrics()) for r in reports
    ]
    if len(reports) > 1:
        rows += [(f"ALL {lang}", m) for lang, m in by_language.items()]
        rows.append(("ALL", aggregate(reports)))
    print(_table(rows))
    shown_rows = [(f"{r.name} [{languages[r.name]}]", aggregate_shown([r])) for r in reports]
    if len(reports) > 1:
        shown_rows += [
            (f"ALL {lang}", aggregate_shown([r for r in reports if languages[r.name] == lang]))
            for lang in by_language
        ]
    print()
    print("what the comment shows (calibrated evidence; label: rows, precision)")
    print(_shown_table(shown_rows))
    return status


def _shown_table(rows: list[tuple[str, ShownMetrics]]) -> str:
    width = max(len(name) for name, _ in rows)
    head = (
        f"{'corpus':<{width}}  {'queries':>7}  {'shown/q':>7}  {'precision':>9}  {'hit':>5}  {'recall':>6}  "
        f"{'high':>11}  {'med':>11}  {'low':>11}"
    )
    lines = [head, "-" * len(head)]
    for name, m in rows:
        labels = "  ".join(f"{m.labels[k][0]:>4}, {m.labels[k][1]:.3f}" for k in ("high", "med", "low"))
        lines.append(
            f"{name:<{width}}  {m.queries:>7}  {m.shown_per_query:>7.2f}  {m.precision:>9.3f}  "
            f"{m.hit_rate:>5.3f}  {m.recall:>6.3f}  {labels}"
        )
    return "\n".join(lines)


def _table(rows: list[tuple[str, dict[str, Metrics]]]) -> str:
    width = max(len(name) for name, _ in rows)
    head = f"{'corpus':<{width}}  {'queries':>7}  " + "  ".join(
        f"{k:^20}" for k in ("bm25", "dense", "hybrid")
    )
    lines = [head, "-" * len(head)]
    for name, metrics in rows:
        cells = "  ".join(
            f"{m.recall_at_5:.3f} {m.hit_at_5:.3f} {m.mrr:.3f}"
            for m in (metrics[k] for k in ("bm25", "dense", "hybrid"))
        )
        lines.append(f"{name:<{width}}  {metrics['hybrid'].queries:>7}  {cells}")
    return "\n".join(lines)
