"""`adr-review action`: run as a GitHub Action (see app/entrypoints/action.py and docs/action.md)."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="render the comments and the job summary without writing to GitHub (also: input dry-run)",
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=os.environ.get("ADR_REVIEW_LOG_LEVEL", "INFO").upper(),
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )
    from app.entrypoints.action import run_action

    return run_action(os.environ, dry_run=bool(args.dry_run))
