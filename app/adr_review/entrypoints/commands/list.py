"""`adr-review list --adr-dir DIR [--json]`

What the tool understood of an ADR folder: every ADR it read (id, status, date, language, title,
supersedes / superseded by, path) and every file it did not read as an ADR, with the reason (a read
error, a symlink leaving the folder, a README / index / template / attachment by its name, not
Markdown), then the notes the parser left on the ADRs (an id clash, a page-slug front matter id, ...).
`--json` prints one list of objects (app/adr_review/core/adr_list.py says which keys). Exit 0, or 2 when DIR is
not a folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PROG = "adr-review list"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--adr-dir", type=Path, required=True, help="folder of ADR markdown files")
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON list: the ADRs, then the skipped files (skipped: reason)",
    )


def run(args: argparse.Namespace) -> int:
    if not args.adr_dir.is_dir():
        print(f"{PROG}: {args.adr_dir}: not a folder", file=sys.stderr)
        return 2
    from adr_review.adapters.adr_files import folder_listing, load_adr_folder
    from adr_review.core.adr_list import as_json, as_text, list_folder

    adrs, errors = load_adr_folder(args.adr_dir)
    listed, skipped = list_folder(adrs, [(e.path, e.reason) for e in errors], folder_listing(args.adr_dir))
    if args.json:
        print(json.dumps(as_json(listed, skipped), indent=2, ensure_ascii=False))
    else:
        print(as_text(listed, skipped))
    return 0
