"""`adr-review review FILE [--adr-dir DIR] [--format markdown|json] [--offline]`: print the PR comment
this ADR would get, without GitHub.

Recall runs over --adr-dir (default: the ADR's own folder). With ANTHROPIC_API_KEY and without
--offline the model picks and the blind-spot critics run; otherwise recall is extractive and the
comment says that blind-spot analysis needs an API key. Exit 0 when a review was printed (degraded or
not: it is advisory), 1 when the file could not be reviewed or the model provider refused the API key
(the comment is still printed), 2 for unusable arguments.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from adr_review.entrypoints.commands.common import repo_config, setup_logging
from adr_review.entrypoints.llm_auth import AuthWatch, refused_message

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adr_review.config import RepoConfig, Settings
    from adr_review.core.adr import Adr, AdrParseError
    from adr_review.pipeline.ports import AdrIndex
    from adr_review.pipeline.state_ports import StateStore

PROG = "adr-review review"
STATE_FILE = "checkpoints.sqlite3"  # in the store folder, as in the Action's cache folder
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the ADR to review (markdown)")
    parser.add_argument(
        "--adr-dir", type=Path, default=None, help="folder of past ADRs (default: FILE's folder)"
    )
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown", help="output format")
    parser.add_argument("--offline", action="store_true", help="no model calls, even with an API key")
    parser.add_argument("--language", choices=("auto", "en", "ja"), default=None, help="force the language")
    parser.add_argument("--config", type=Path, default=None, help="repo config YAML (.github/adr-review.yml)")
    parser.add_argument(
        "--store",
        type=Path,
        default=None,
        help="the store folder, as for `index` and `recall`: the ADR index lives there and this review's "
        f"checkpoints in STORE/{STATE_FILE}, so a re-run with the same inputs reuses the stored stages "
        "(default: no checkpoints, the index in .adr-review/). A SQLite file still works (deprecated)",
    )
    parser.add_argument(
        "--index-dir",
        type=Path,
        default=None,
        help="where the ADR index lives, over --store's (default: --store, else .adr-review/)",
    )
    parser.add_argument(
        "--link-base",
        default="",
        help="URL prefix for links to cited ADRs, e.g. https://github.com/OWNER/REPO/blob/main "
        "(default: links relative to the current folder; 'none' for no links)",
    )


def run(args: argparse.Namespace) -> int:
    setup_logging()
    from adr_review.config import Settings

    file: Path = args.file
    adr_dir: Path = args.adr_dir or file.parent
    if not file.is_file():
        what = "a folder, not a file" if file.is_dir() else "no such file"
        print(f"{PROG}: {file}: {what}", file=sys.stderr)
        return 2
    if not adr_dir.is_dir():
        print(f"{PROG}: {adr_dir}: not a folder", file=sys.stderr)
        return 2
    try:
        config = repo_config(args.config)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if args.language:
        config = config.model_copy(update={"language": args.language})
    settings = Settings()

    llm = None
    reason: Literal["offline", "no_api_key"] = "offline" if args.offline else "no_api_key"
    if not args.offline and settings.anthropic_api_key:
        from adr_review.adapters.llm import make_llm

        made = make_llm(settings, config)
        llm = AuthWatch(made) if made is not None else None

    from adr_review.core.render import render_comment
    from adr_review.core.serde import review_to_dict
    from adr_review.pipeline.adr.review import ReviewDeps, ReviewTarget, review_adr
    from adr_review.pipeline.checkpoint import memo_for
    from adr_review.pipeline.ports import no_memo
    from adr_review.prompts import packaged

    index_dir, state_file = store_paths(args.store, args.index_dir)
    index, folder = _index(adr_dir, index_dir, config, settings)
    prompts = packaged()
    deps = ReviewDeps(
        index=index,
        folder=folder,
        llm=llm,
        config=config,
        prompts=prompts,
        link_base=None if args.link_base == "none" else args.link_base,
        adr_dir=_display_path(adr_dir),
        llm_unavailable_reason=reason,
        recall_enabled=settings.recall_enabled,
    )
    from adr_review.adapters.adr_files import bounded_bytes
    from adr_review.entrypoints.errors import error_text

    try:
        content = bounded_bytes(file)
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {error_text(exc)}", file=sys.stderr)
        return 2
    target = ReviewTarget(
        repo="", pr=None, head_sha="", base_sha="", adr_path=_display_path(file), content=content
    )
    key = target.key(config, prompts.hash, online=llm is not None)
    store = _store(state_file)
    reused: list[str] = []
    if store is not None:  # the run's lifecycle is ours: one row, running -> completed / failed
        store.ensure_run(key, {"adr_path": target.adr_path})
        store.set_state(key, "running")
    memo = memo_for(store, key, on_reuse=reused.append) if store is not None else no_memo
    review = review_adr(target, deps, memo, run_key=key, reused=reused)
    if store is not None:
        store.set_state(key, "failed" if review.error else "completed", review.error)
        store.close()
    if review.error:
        print(f"{PROG}: {file}: {review.error}", file=sys.stderr)
    comment = render_comment(review, link_base=deps.link_base)
    if args.format == "json":
        out = {"review": review_to_dict(review, compact=True), "comment": comment}
        print(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        sys.stdout.write(comment if comment.endswith("\n") else comment + "\n")
    if llm is not None and llm.refused:
        from adr_review.adapters.llm import provider_of

        print(
            f"{PROG}: error: {refused_message(llm.refused, provider_of(settings, config), 'cli')}",
            file=sys.stderr,
        )
        return 1
    return 1 if review.error else 0


def _display_path(path: Path) -> str:
    """Relative to the current folder when inside it (so links work from here), else absolute."""
    from adr_review.core.adr_paths import printable_path

    resolved = path.resolve()
    try:
        return printable_path(resolved.relative_to(Path.cwd().resolve()).as_posix())
    except ValueError:
        return printable_path(resolved.as_posix())


def store_paths(store: Path | None, index_dir: Path | None) -> tuple[Path | None, Path | None]:
    """(the index folder, the checkpoints file) for --store and --index-dir. --store names the store
    folder, as for `index` and `recall`; a SQLite file there is the old meaning (checkpoints only),
    still accepted with a note."""
    if store is None:
        return index_dir, None
    if store.is_file() or (not store.exists() and store.suffix.lower() in SQLITE_SUFFIXES):
        print(
            f"{PROG}: note: --store {store}: a SQLite file here is deprecated; --store names the store "
            f"folder (as for `index` and `recall`), which keeps the index and {STATE_FILE}",
            file=sys.stderr,
        )
        return index_dir, store
    return index_dir or store, store / STATE_FILE


def _store(path: Path | None) -> StateStore | None:
    """The checkpoints file; None without one (a one-off run has nothing to resume)."""
    if path is None:
        return None
    from adr_review.adapters.state_sqlite import SqliteStateStore, StoreError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(
            f"{PROG}: warning: cannot open the store {path}: {exc.strerror or exc}; this run's stages are not saved",
            file=sys.stderr,
        )
        return None
    try:
        return SqliteStateStore(path)
    except StoreError as exc:  # checkpoints save a re-run's work; without them this run still goes on
        print(f"{PROG}: warning: {exc}; this run's stages are not saved", file=sys.stderr)
        return None


def _index(
    adr_dir: Path, index_dir: Path | None, config: RepoConfig, settings: Settings
) -> tuple[AdrIndex, list[Adr]]:
    """The folder's hybrid index, brought up to date (incremental), and the folder's ADRs. If the index
    cannot be opened, an index whose searches fail, so recall degrades (and says so) instead of the
    whole review failing."""
    from adr_review.adapters.adr_files import load_adr_folder
    from adr_review.adapters.index_open import ensure_synced, open_index_for
    from adr_review.pipeline.plans.folders import UnavailableIndex

    try:
        index = open_index_for(adr_dir, index_dir or settings.store_dir, config=config.retrieval)
        synced = ensure_synced(index, adr_dir)
    except Exception as exc:
        logging.getLogger(__name__).warning("index_unavailable: %s: %s", type(exc).__name__, exc)
        folder, errors = load_adr_folder(adr_dir)
        _report_parse_errors(errors)
        return UnavailableIndex(f"the ADR index could not be opened ({type(exc).__name__}: {exc})"), folder
    _report_parse_errors(synced.parse_errors)
    for problem in synced.report.errors:  # what the index went on without (a model, an extra)
        print(f"{PROG}: warning: {problem}", file=sys.stderr)
    return index, synced.adrs


def _report_parse_errors(errors: Sequence[AdrParseError]) -> None:
    for err in errors:
        print(f"{PROG}: skipped {err}", file=sys.stderr)
