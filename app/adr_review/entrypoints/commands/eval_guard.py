"""`adr-review eval guard --repo OWNER/NAME=GITDIR ... [--cases FILE] [--json] [--records FILE] [--work DIR]`

Rebuilds every case of the guard's dev set (default: benchmarks/guard_cases.json of this checkout)
from local clones or bare mirrors of the repositories it names, runs the guard on each and prints
the figures of app/adr_review/evals/guard.py (overall and per repository). Cases of a repository without a
--repo are skipped and counted. --records writes every case's record (its ranking, what was listed,
the features of its head) for benchmarks/calibrate_guard.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from adr_review.entrypoints.commands.common import setup_logging

PROG = "adr-review eval guard"
DEFAULT_CASES = Path(__file__).resolve().parents[4] / "benchmarks" / "guard_cases.json"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cases", type=Path, default=DEFAULT_CASES, help="the dev set (commit ids, expected ADRs)"
    )
    parser.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="OWNER/NAME=GITDIR",
        help="a local clone or bare mirror",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--records", type=Path, default=None, help="write every case's record here (JSON)")
    parser.add_argument("--work", type=Path, default=None, help="work folder for ADR folders and indexes")
    parser.add_argument(
        "--body",
        action="store_true",
        help="pass each commit's message body (trailers out, ADR references masked) as the PR body",
    )


def run(args: argparse.Namespace) -> int:
    setup_logging()
    from adr_review.config import RetrievalConfig
    from adr_review.core.guard_model import GUARD_EVIDENCE
    from adr_review.evals.guard import load_cases, run_case, summarise

    if not args.cases.is_file():
        print(f"{PROG}: {args.cases}: no such file", file=sys.stderr)
        return 2
    repos = {}
    for spec in args.repo:
        name, sep, path = spec.partition("=")
        if not sep or not Path(path).exists():
            print(f"{PROG}: --repo {spec}: want OWNER/NAME=GITDIR (an existing git folder)", file=sys.stderr)
            return 2
        repos[name] = Path(path)
    cases = load_cases(args.cases)
    runnable = [c for c in cases if c.repo in repos]
    if not runnable:
        print(f"{PROG}: no case of the given repositories in {args.cases}", file=sys.stderr)
        return 2
    skipped = len(cases) - len(runnable)
    with tempfile.TemporaryDirectory(prefix="adr-review-guard-") as tmp:
        work = args.work or Path(tmp)
        records = []
        for i, case in enumerate(runnable, 1):
            records.append(
                run_case(
                    case,
                    repos[case.repo],
                    work / "folders",
                    work / "store",
                    RetrievalConfig(),
                    GUARD_EVIDENCE,
                    body=args.body,
                )
            )
            if i % 25 == 0:
                print(f"{PROG}: {i}/{len(runnable)} cases", file=sys.stderr)
    if args.records:
        args.records.write_text(json.dumps(records, indent=1) + "\n")
    summary = {
        "cases": len(runnable),
        "skipped_no_repo": skipped,
        "floor": GUARD_EVIDENCE.floor,
        **summarise(records),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for name, block in [("overall", summary["overall"]), *summary["repos"].items()]:
        b = block["bm25"]
        print(
            f"{name}: positives {block['positives']} (+{block['positives_not_enforced']} not enforced), "
            f"negatives {block['negatives']}: hit {block['hit_rate']:.3f}, R@5 {block['recall@5']:.3f} "
            f"(BM25 {b['recall@5']:.3f}), MRR {block['mrr']:.3f} (BM25 {b['mrr']:.3f}), "
            f"silence {block['silence_rate']:.3f}; AUC top evidence {block['auc_top_evidence']}, "
            f"BM25 top {b['auc_top_score']}, BM25 top z {b['auc_top_z']}"
        )
    if skipped:
        print(f"{skipped} case(s) skipped: no --repo for their repository", file=sys.stderr)
    return 0
