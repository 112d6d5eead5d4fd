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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from app.entrypoints.commands.common import repo_config, setup_logging

if TYPE_CHECKING:
    from app.config import RetrievalConfig

PROG = "adr-review index"


def add_index_arguments(
    parser: argparse.ArgumentParser,
    *,
    adr_dir_required: bool = True,
    store_help: str = "where the index lives (default: .adr-review/ or ADR_REVIEW_STORE_DIR)",
) -> None:
    """--adr-dir, --store, --embedding, --config: shared by index, recall and eval retrieval."""
    if adr_dir_required:
        parser.add_argument("--adr-dir", type=Path, required=True, help="folder of ADR markdown files")
    parser.add_argument("--store", type=Path, default=None, help=store_help)
    parser.add_argument(
        "--embedding",
        default=None,
        help="offline-hash (default), default (chromadb's ONNX MiniLM, downloads a model) or "
        "sentence-transformers:<model or path>; see docs/embeddings.md",
    )
    parser.add_argument(
        "--multilingual",
        choices=("auto", "on", "off"),
        default=None,
        help="the cross-language channel (the multilingual extra): auto (the default: on for folders "
        "in more than one language), on, off; overrides retrieval.multilingual",
    )
    parser.add_argument("--config", type=Path, default=None, help="repo config YAML (.github/adr-review.yml)")


def configure(parser: argparse.ArgumentParser) -> None:
    add_index_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the sync report as JSON")


def retrieval_config(args: argparse.Namespace) -> RetrievalConfig:
    """--config's `retrieval:` section (defaults without one), --multilingual over it. Raises
    ValueError with a clear message."""
    config = repo_config(getattr(args, "config", None)).retrieval
    if getattr(args, "multilingual", None):
        config = config.model_copy(update={"multilingual": args.multilingual})
    return config


def store_dir(args: argparse.Namespace, config: RetrievalConfig) -> Path:
    if getattr(args, "store", None):
        return Path(args.store)
    if config.store_dir:
        return Path(config.store_dir)
    from app.config import Settings

    return Path(Settings().store_dir)


def progress_reporter(label: str, stream: TextIO | None = None) -> Callable[[int, int], None]:
    """A bar redrawn in place on an interactive terminal; otherwise a few plain log lines."""
    out = stream or sys.stderr
    interactive = out.isatty()
    state = {"last": -1, "start": time.perf_counter()}

    def report(done: int, total: int) -> None:
        if total <= 0:
            return
        if interactive:
            width = 30
            filled = int(width * done / total)
            out.write(f"\r{label}: [{'#' * filled}{'.' * (width - filled)}] {done}/{total} chunks")
            if done >= total:
                out.write(f" ({time.perf_counter() - state['start']:.1f}s)\n")
            out.flush()
            return
        quarter = 4 * done // total
        if quarter != state["last"] and (done == 0 or done >= total or quarter > state["last"]):
            state["last"] = quarter
            out.write(f"{label}: embedded {done}/{total} chunks\n")
            out.flush()

    return report


def sync_summary(report: Any) -> str:
    rebuilt = " (rebuilt: embedding or chunking changed)" if report.rebuilt else ""
    return (
        f"indexed with {report.embedding}: {report.added} added, {report.updated} updated, "
        f"{report.removed} removed, {report.unchanged} unchanged in {report.seconds:.2f}s{rebuilt}"
    )


def run(args: argparse.Namespace) -> int:
    setup_logging()
    if not args.adr_dir.is_dir():
        print(f"{PROG}: {args.adr_dir}: not a folder", file=sys.stderr)
        return 2
    from app.pipeline.ports import IndexStoreError

    try:
        config = retrieval_config(args)
        from app.adapters.index_open import ensure_synced, open_index_for

        start = time.perf_counter()
        index = open_index_for(args.adr_dir, store_dir(args, config), args.embedding, config)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except IndexStoreError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    synced = ensure_synced(index, args.adr_dir, progress=progress_reporter("index"))
    elapsed = time.perf_counter() - start
    report = synced.report
    for err in report.errors:
        print(f"{PROG}: warning: {err}", file=sys.stderr)
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
