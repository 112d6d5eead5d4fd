"""What every local command does the same way: logging to stderr, reading --config, and the index
options and progress of the commands that open an index (index, recall, eval retrieval)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from adr_review.config import RepoConfig, RetrievalConfig
    from adr_review.pipeline.ports import SyncReport


_STD_ATTRS = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class ExtraFormatter(logging.Formatter):
    """One line per record; `extra=` fields appended as JSON, so a log line says what happened and
    why (`llm_call_failed {"kind": "auth", "error": "HTTP 401: ..."}`), not only its event name."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = {k: v for k, v in record.__dict__.items() if k not in _STD_ATTRS}
        if extra:
            line += " " + json.dumps(extra, default=str, ensure_ascii=False)
        return line


def setup_logging(default_level: str = "WARNING") -> None:
    """logging.basicConfig with the ExtraFormatter (nothing changes where logging is already set up)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ExtraFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(
        level=os.environ.get("ADR_REVIEW_LOG_LEVEL", default_level).upper(), handlers=[handler]
    )


def folder_relative(file: Path, adr_dir: Path) -> str | None:
    """The file's path inside the ADR folder as printable text (a name that is not UTF-8 is kept as
    its bytes, adr_review.core.adr_paths.printable_path), None when it is outside the folder."""
    from adr_review.core.adr_paths import printable_path

    try:
        return printable_path(file.resolve().relative_to(adr_dir.resolve()).as_posix())
    except ValueError:
        return None


def repo_config(path: Path | None) -> RepoConfig:
    """The repo config from --config (the defaults without one). Raises ValueError with a one-line message."""
    from adr_review.config import RepoConfig, RepoConfigError, parse_repo_config
    from adr_review.entrypoints.errors import error_text

    if path is None:
        return RepoConfig()
    try:
        return parse_repo_config(path.read_bytes(), str(path))
    except OSError as exc:
        raise ValueError(f"--config: {error_text(exc)}") from exc
    except RepoConfigError as exc:
        raise ValueError(str(exc)) from exc


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
    from adr_review.process_env import process_settings

    return Path(process_settings(os.environ).store_dir)


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


def sync_summary(report: SyncReport) -> str:
    rebuilt = " (rebuilt: embedding or chunking changed)" if report.rebuilt else ""
    return (
        f"indexed with {report.embedding}: {report.added} added, {report.updated} updated, "
        f"{report.removed} removed, {report.unchanged} unchanged in {report.seconds:.2f}s{rebuilt}"
    )


def open_synced(prog: str, args: argparse.Namespace, config: RetrievalConfig, progress: bool = True) -> Any:
    """The folder's index, synced, and the sync (recall, guard); an exit status (int) when the store
    cannot be opened, after saying why on stderr. Parse errors are printed as warnings."""
    from adr_review.adapters.index_open import ensure_synced, open_index_for
    from adr_review.pipeline.ports import IndexStoreError

    try:
        index = open_index_for(args.adr_dir, store_dir(args, config), args.embedding, config)
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except IndexStoreError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    synced = ensure_synced(index, args.adr_dir, progress=progress_reporter("index") if progress else None)
    for err in synced.report.errors:
        print(f"{prog}: warning: {err}", file=sys.stderr)
    return index, synced
