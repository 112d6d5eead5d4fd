"""`adr-review eval TARGET ...`: offline evaluations, one sub-command per target.

Each target is a module with `configure(parser)` and `run(args) -> int`, registered in TARGETS and
imported only when that target runs (or when `eval --help` lists them), so heavy imports stay lazy.
To add a target: write app/adr_review/entrypoints/commands/eval_<name>.py and add one line to TARGETS.
"""

from __future__ import annotations

import argparse
import importlib

# name -> (module under adr_review.entrypoints.commands, one-line help)
TARGETS: dict[str, tuple[str, str]] = {
    "retrieval": (
        "eval_retrieval",
        "score retrieval (BM25, dense, hybrid) on a corpus with qrels.jsonl: Recall@5, Hit@5, MRR",
    ),
    "guard": (
        "eval_guard",
        "score the guard on commits rebuilt from history: hit rate, R@5, MRR, silence, BM25 beside them",
    ),
    "prompts": (
        "eval_prompts",
        "score each prompt on its golden cases: replay the recordings offline, or --live; --record",
    ),
}


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    for name, (module, help_text) in TARGETS.items():
        target = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(f"adr_review.entrypoints.commands.{module}").configure(target)
        target.set_defaults(eval_module=module)


def run(args: argparse.Namespace) -> int:
    module = importlib.import_module(f"adr_review.entrypoints.commands.{args.eval_module}")
    return int(module.run(args) or 0)
