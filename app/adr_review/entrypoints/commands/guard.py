"""`adr-review guard --adr-dir DIR --diff FILE [--title TEXT] [--body TEXT] [--json] [--offline]`

The accepted decisions of DIR that a code change touches (app/adr_review/pipeline/guard.py), printed as the
comment the guard would post, or a one-line note when it stays silent (the usual answer). --diff is
a unified diff (`git diff`, `git show`, a pull request's .diff); `-` reads it from stdin. The guard
runs offline today: --offline is accepted (and is what runs) so scripts need not change when a
model check is added. --json prints {"decisions": [...], "silent_reason", "floor", "pool_size",
"budget", "ignored", "dropped", "candidates"}; `decisions` is the list the comment shows (empty when
silent), each with path (relative to DIR), id, title, status, evidence, reason, decision, section,
via and diff_evidence ([{path, change, line, text}]).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adr_review.entrypoints.commands.common import (
    add_index_arguments,
    open_synced,
    retrieval_config,
    setup_logging,
)

if TYPE_CHECKING:
    from adr_review.core.guard import Implicated
    from adr_review.pipeline.guard import GuardResult

PROG = "adr-review guard"


def configure(parser: argparse.ArgumentParser) -> None:
    add_index_arguments(parser)
    parser.add_argument("--diff", required=True, help="a unified diff file, or - for stdin")
    parser.add_argument("--title", default="", help="the pull request's title")
    parser.add_argument("--body", default="", help="the pull request's description")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--offline", action="store_true", help="no model call (the guard is offline today)")


def reason_of(d: Implicated, floor: float) -> str:
    terms = ", ".join(d.terms[:6])
    via = f"; matched through {d.via.adr_id}, which it supersedes" if d.via is not None else ""
    return f"evidence {d.probability:.2f} >= floor {floor:.3f}; the diff shares {terms}{via}"


def decision_json(d: Implicated, floor: float) -> dict[str, Any]:
    return {
        "path": d.adr.path,
        "id": d.adr.adr_id,
        "title": d.adr.title,
        "status": d.adr.status,
        "evidence": round(d.probability, 4),
        "reason": reason_of(d, floor),
        "decision": d.decision,
        "section": d.section,
        "via": d.via.path if d.via is not None else None,
        "diff_evidence": [
            {"path": e.path, "change": e.change, "line": e.number, "text": e.text} for e in d.lines
        ],
    }


def result_json(result: GuardResult) -> dict[str, Any]:
    q = result.query
    return {
        "decisions": [decision_json(d, result.floor) for d in result.decisions],
        "silent_reason": result.silent_reason,
        "floor": result.floor,
        "pool_size": result.pool_size,
        "budget": {"changed_lines": len(q.lines), "lines_in_query": q.used_lines, "cut": list(q.cut)},
        "ignored": list(q.ignored),
        "dependencies": [
            {"name": d.name, "manifest": d.manifest, "change": d.change} for d in q.dependencies
        ],
        "dropped": dict(result.dropped),
        "candidates": [
            {"path": c.adr.path, "id": c.adr.adr_id, "evidence": c.evidence} for c in result.candidates
        ],
    }


def _read_diff(name: str) -> str:
    data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    return data.decode("utf-8", "replace")


def run(args: argparse.Namespace) -> int:
    setup_logging()
    if not args.adr_dir.is_dir():
        print(f"{PROG}: {args.adr_dir}: not a folder", file=sys.stderr)
        return 2
    from adr_review.entrypoints.errors import error_text

    try:
        config = retrieval_config(args)
        diff = _read_diff(args.diff)
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {error_text(exc)}", file=sys.stderr)
        return 2
    from adr_review.core.render import render_guard
    from adr_review.pipeline.guard import run_guard

    opened = open_synced(PROG, args, config, progress=False)
    if isinstance(opened, int):
        return opened
    index, synced = opened
    result = run_guard(diff, index, synced.adrs, title=args.title, body=args.body)
    for cut in result.query.cut:
        print(f"{PROG}: budget: {cut}", file=sys.stderr)
    if args.json:
        print(json.dumps(result_json(result), indent=2, ensure_ascii=False))
    else:
        body = render_guard(result.decisions, result.query.cut, result.floor)
        if not result.decisions and result.silent_reason:
            body = body.rstrip("\n") + f" ({result.silent_reason})\n"
        sys.stdout.write(body)
    return 0
