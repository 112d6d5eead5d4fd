"""`adr-review index --adr-dir DIR [--store DIR] [--embedding NAME] [--config FILE] [--json]`

Build or refresh the hybrid index of an ADR folder. Incremental by content hash: prints how many ADRs
were added / updated / removed / unchanged, which embedding ran, and how long it took. Files that are
not readable ADRs are listed and skipped. Exit 0 when the index is up to date (even lexical-only after
an embedding failure, which is reported loudly), 2 for unusable arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from adr_review.entrypoints.commands.common import (
    add_index_arguments,
    open_synced,
    retrieval_config,
    setup_logging,
    sync_summary,
)

PROG = "adr-review index"


def configure(parser: argparse.ArgumentParser) -> None:
    add_index_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the sync report as JSON")


def run(args: argparse.Namespace) -> int:
    setup_logging()
    if not args.adr_dir.is_dir():
        print(f"{PROG}: {args.adr_dir}: not a folder", file=sys.stderr)
        return 2
    try:
        config = retrieval_config(args)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    opened = open_synced(PROG, args, config)  # says why on stderr when it cannot
    if isinstance(opened, int):
        return opened
    index, synced = opened
    elapsed = time.perf_counter() - start
    report = synced.report
    if args.json:
        payload = {
            "added": report.added,
            "updated": report.updated,
            "removed": report.removed,
            "unchanged": report.unchanged,
            "rebuilt": report.rebuilt,
            "embedding": report.embedding,
            "embedding_failed": index.embedding_error is not None,
            "errors": list(report.errors),
            "seconds": round(elapsed, 3),
            "sync_seconds": round(report.seconds, 3),
            "store": str(index.store_dir),
            "collection": index.collection_name,
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(sync_summary(report) + f"; {elapsed:.2f}s in total")
        print(f"store: {index.store_dir} (collection {index.collection_name})")
    if index.embedding_error is not None:
        print(
            f"{PROG}: WARNING: embedding {report.embedding} failed, search will be lexical-only (BM25): "
            f"{index.embedding_error}",
            file=sys.stderr,
        )
    return 0
