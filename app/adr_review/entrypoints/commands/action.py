"""`adr-review action`: run as a GitHub Action (see app/adr_review/entrypoints/action.py and docs/action.md)."""

from __future__ import annotations

import argparse
import os

from adr_review.entrypoints.commands.common import setup_logging


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="render the comments and the job summary without writing to GitHub (also: input dry-run)",
    )


def run(args: argparse.Namespace) -> int:
    setup_logging("INFO")
    from adr_review.entrypoints.action import run_action

    return run_action(os.environ, dry_run=bool(args.dry_run))
