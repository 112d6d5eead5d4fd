"""`adr-review health --worker`: exit 0 when this host's worker process beat recently, 1 (with the
reason) when not; the healthcheck of a `serve --role worker` container (app/adr_review/entrypoints/liveness.py).
A web process has `GET /healthz` instead."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--worker", action="store_true", help="check the worker role's heartbeat file")
    parser.add_argument(
        "--file",
        type=Path,
        default=None,
        help="the heartbeat file (ADR_REVIEW_HEARTBEAT_FILE, default <store_dir>/worker.heartbeat)",
    )
    parser.add_argument("--max-age", type=float, default=None, help="seconds (default 60)")


def run(args: argparse.Namespace) -> int:
    from adr_review.config import AppSettings
    from adr_review.entrypoints.liveness import DEFAULT_MAX_AGE_S, default_path, stale

    if not args.worker:
        print(
            "adr-review health: say what to check: --worker (a web process answers GET /healthz)",
            file=sys.stderr,
        )
        return 2
    settings = AppSettings()
    path = args.file or settings.heartbeat_file or default_path(settings.store_dir)
    why = stale(path, args.max_age if args.max_age is not None else DEFAULT_MAX_AGE_S)
    if why is not None:
        print(f"adr-review health: unhealthy: {why}", file=sys.stderr)
        return 1
    print("adr-review health: worker alive")
    return 0
