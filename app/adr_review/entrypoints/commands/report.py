"""`adr-review report`: what reviewers did with the findings, against the seed's sunset rule (ADR-0071),
read from the state store the Action or the App keeps (docs/feedback.md).

The report goes to stdout (Markdown with Mermaid charts, or JSON); `--png FILE` also draws it (the
`report` extra, matplotlib); `--export-dismissed PROMPTS_DIR` writes the dismissed findings that have a
reason as negative golden cases (app/adr_review/evals/golden/dismissed.py). Notes go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from adr_review.core.report import MIN_SHOWN

ACTION_STORE = Path(".adr-review") / "checkpoints.sqlite3"  # the Action's default cache-dir


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        help="the state store: a store folder (its app.sqlite3 or checkpoints.sqlite3), a SQLite file or "
        "postgresql://... (default: ADR_REVIEW_DATABASE_URL, else "
        "ADR_REVIEW_DB_PATH, else <ADR_REVIEW_STORE_DIR>/app.sqlite3 (the App's), else "
        ".adr-review/checkpoints.sqlite3 (the Action's cache folder), the first that exists)",
    )
    parser.add_argument(
        "--repo", metavar="OWNER/NAME", help="one repository (default: every one in the store)"
    )
    window = parser.add_mutually_exclusive_group()
    window.add_argument(
        "--days", type=float, help="the last N days (default 30; the sunset rule is meant for 90)"
    )
    window.add_argument(
        "--since", metavar="DATE", help="ISO date or date-time (UTC unless it says otherwise)"
    )
    parser.add_argument("--until", metavar="DATE", help="with --since: the end (a date: through that day)")
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    parser.add_argument("--language", choices=("en", "ja"), default="en", help="of the Markdown")
    parser.add_argument(
        "--min-findings",
        type=int,
        default=MIN_SHOWN,
        metavar="N",
        help=f"findings shown before a verdict is given (default {MIN_SHOWN})",
    )
    parser.add_argument(
        "--png", type=Path, metavar="FILE", help="also draw the report as a PNG (needs matplotlib)"
    )
    parser.add_argument(
        "--export-dismissed",
        type=Path,
        metavar="PROMPTS_DIR",
        help="write dismissed findings with a reason as negative golden cases into this prompts folder",
    )
    parser.add_argument(
        "--adr-dir",
        type=Path,
        metavar="CHECKOUT",
        help="with --export-dismissed: the repository checkout the ADR files are copied from",
    )


def run(args: argparse.Namespace) -> int:
    from adr_review.entrypoints.commands.common import setup_logging

    setup_logging()
    try:
        window = _window(args, time.time())
    except ValueError as exc:
        return _fail(str(exc))
    if args.repo is not None and args.repo.count("/") != 1:
        return _fail(f"--repo {args.repo!r} is not owner/name")
    if args.until and not args.since:
        return _fail("--until needs --since")
    try:
        store = open_report_store(args.store)
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    try:
        return _run(args, store, window)
    finally:
        store.close()


def _run(args: argparse.Namespace, store: Any, window: Any) -> int:
    from adr_review.core.render import render_report
    from adr_review.core.report import report_dict
    from adr_review.pipeline.reporting.report import report_for

    report = report_for(store, args.repo, window, min_shown=args.min_findings)
    if args.format == "json":
        print(json.dumps(report_dict(report), ensure_ascii=False, indent=2))
    else:
        sys.stdout.write(render_report(report, language=args.language))
    code = 0
    if args.png is not None:
        code = max(code, _png(report, args.png))
    if args.export_dismissed is not None:
        from adr_review.entrypoints.export_dismissed import export_dismissed

        _adrs, findings = store.outcomes(args.repo, window.since, window.until)
        code = max(code, export_dismissed(findings, args.export_dismissed, args.adr_dir, _note))
    return code


def _png(report: Any, path: Path) -> int:
    from adr_review.adapters.report_chart import ChartUnavailable, report_png

    try:
        data = report_png(report)
    except ChartUnavailable as exc:
        return _fail(f"--png: {exc}; the report above is complete, no PNG was written", code=1)
    try:
        path.write_bytes(data)
    except OSError as exc:
        return _fail(f"--png: cannot write {path}: {exc.strerror or exc}", code=1)
    _note(f"wrote {path} ({len(data)} bytes)")
    return 0


def open_report_store(spec: str | None) -> Any:
    """The store named by --store, else where the App keeps it (its settings: ADR_REVIEW_DATABASE_URL,
    ADR_REVIEW_DB_PATH, ADR_REVIEW_STORE_DIR), else the Action's default cache folder. A SQLite file that
    does not exist is an error, never a new empty store (an empty report would look like no feedback)."""
    from adr_review.config import AppSettings

    settings = AppSettings()
    spec = spec or settings.database_url or None
    if spec and spec.startswith(("postgresql://", "postgres://")):
        try:
            from adr_review.adapters.state_postgres import PostgresStateStore
        except ImportError as exc:
            raise ValueError(
                f"a PostgreSQL store needs the app extra: pip install 'adr-review[app]' ({exc})"
            ) from None
        return PostgresStateStore(spec, pool_size=1)
    if spec and Path(spec).is_dir():  # a store folder, as `--store` means for the other commands
        candidates = [Path(spec) / "app.sqlite3", Path(spec) / ACTION_STORE.name]
    elif spec:
        candidates = [Path(spec)]
    else:
        candidates = [settings.db_path] if settings.db_path else []
        candidates += [settings.store_dir / "app.sqlite3", ACTION_STORE]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        looked = ", ".join(str(p) for p in candidates)
        raise ValueError(f"no state store at {looked} (name one with --store PATH or postgresql://...)")
    from adr_review.adapters.state_sqlite import SqliteStateStore, StoreError

    try:
        return SqliteStateStore(found)
    except StoreError as exc:
        raise ValueError(str(exc)) from None


def _window(args: argparse.Namespace, now: float) -> Any:
    from adr_review.pipeline.reporting.report import DEFAULT_DAYS, Window

    if args.since:
        since = _instant(args.since, "--since", end_of_day=False)
        until = _instant(args.until, "--until", end_of_day=True) if args.until else now
        if until <= since:
            raise ValueError("--until must be after --since")
        return Window(since, until)
    return Window.last_days(args.days if args.days is not None else DEFAULT_DAYS, now)


def _instant(text: str, flag: str, *, end_of_day: bool) -> float:
    """An ISO date (a whole day: --until includes it) or date-time; UTC unless it has an offset."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return (start + timedelta(days=1) if end_of_day else start).timestamp()
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{flag} {text!r} is not an ISO date (2026-11-01) or date-time") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _note(text: str) -> None:
    print(f"adr-review report: {text}", file=sys.stderr)


def _fail(text: str, code: int = 2) -> int:
    """2: the command could not run (arguments, store); 1: it ran and printed, but a part failed."""
    _note(text)
    return code
