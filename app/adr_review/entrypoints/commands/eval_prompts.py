"""`adr-review eval prompts`: score every LLM step on its golden cases, offline (replay) or live.

Replay scores the committed recordings through the production stages and fails a prompt whose
recordings no longer match the request production would send (stale), with the command to re-record.
Live calls the model through the Anthropic adapter; `--record` writes what it answered.
The gate itself is app/adr_review/evals/golden/; see docs/golden-eval.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from adr_review.prompts import PROMPTS_DIR

LIVE_SAMPLES = 3  # a live run samples each case this often: one answer says little about a prompt

if TYPE_CHECKING:
    from adr_review.pipeline.ports import LlmPort


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompt", action="append", metavar="NAME", help="only this prompt (repeatable)")
    parser.add_argument(
        "--changed-since", metavar="REF", help="only prompts whose files (or inputs) changed since REF"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--replay", dest="mode", action="store_const", const="replay", help="score the recordings (default)"
    )
    mode.add_argument(
        "--live",
        dest="mode",
        action="store_const",
        const="live",
        help="call the model (needs ANTHROPIC_API_KEY)",
    )
    parser.set_defaults(mode="replay")
    parser.add_argument(
        "--record", action="store_true", help="with --live: write the answers as the new recordings"
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=None,
        metavar="N",
        help=f"with --live: answers per case, scored each (metrics: their mean and spread; default {LIVE_SAMPLES})",
    )
    parser.add_argument(
        "--rekey-hand-written",
        action="store_true",
        help="re-key hand-written answers to the current prompt (after checking they still fit), then replay",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--summary",
        type=Path,
        metavar="FILE",
        help="append the Markdown report to FILE (default: $GITHUB_STEP_SUMMARY when set)",
    )
    parser.add_argument("--prompts-dir", type=Path, default=PROMPTS_DIR, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    # The golden runs fail every step but the one under test on purpose; those warnings are noise here.
    pipeline_log = logging.getLogger("adr_review.pipeline")
    level = pipeline_log.level
    pipeline_log.setLevel(logging.ERROR)
    try:
        return _run(args)
    finally:
        pipeline_log.setLevel(level)


def _run(args: argparse.Namespace) -> int:
    from adr_review.evals.golden.cases import GoldenError
    from adr_review.evals.golden.rekey import PriceFn, rekey_hand_written
    from adr_review.evals.golden.report import render_markdown, render_text, report_json
    from adr_review.evals.golden.runner import Answering, EvalReport, discover_prompts, run_prompt
    from adr_review.evals.golden.selection import select_changed
    from adr_review.evals.golden.suites import suite_for

    prompts_dir: Path = args.prompts_dir
    if args.record and args.mode != "live":
        print(
            "--record needs --live (it records what the model answers); "
            "hand-written answers are re-keyed with --rekey-hand-written",
            file=sys.stderr,
        )
        return 2
    if args.samples is not None and (args.mode != "live" or args.samples < 1):
        print("--samples N needs --live and N >= 1 (a recording is one answer)", file=sys.stderr)
        return 2
    names = discover_prompts(prompts_dir)
    if args.prompt:
        unknown = sorted(set(args.prompt) - set(names))
        if unknown:
            print(f"unknown prompt(s): {', '.join(unknown)}; known: {', '.join(names)}", file=sys.stderr)
            return 2
        names = [n for n in names if n in args.prompt]
    selected_by = None
    skipped: list[str] = []
    if args.changed_since:
        try:
            chosen = select_changed(names, prompts_dir, args.changed_since)
        except GoldenError as exc:
            print(f"--changed-since: {exc}", file=sys.stderr)
            return 2
        skipped = [n for n in names if n not in chosen]
        names, selected_by = chosen, f"--changed-since {args.changed_since}"

    if args.rekey_hand_written:
        price = PriceFn()
        for name in names:
            for message in rekey_hand_written(name, suite_for(name), prompts_dir, price):
                print(message, file=sys.stderr)

    answering = Answering(mode=args.mode)
    if args.mode == "live":
        try:
            llm, base_url = _live_llm()
        except RuntimeError as exc:
            print(str(exc), file=sys.stderr)
            return 2
        samples = args.samples or LIVE_SAMPLES
        answering = Answering("live", llm=llm, record=args.record, base_url=base_url, samples=samples)

    report = EvalReport(mode=args.mode, prompts=[], selected_by=selected_by, skipped=skipped)
    for name in names:
        report.prompts.append(run_prompt(name, suite_for(name), prompts_dir, answering))

    if args.json:
        print(json.dumps(report_json(report), ensure_ascii=False, indent=2))
    else:
        sys.stdout.write(render_text(report, prompts_dir))
    summary = args.summary or (
        Path(os.environ["GITHUB_STEP_SUMMARY"]) if os.environ.get("GITHUB_STEP_SUMMARY") else None
    )
    if summary is not None:
        with summary.open("a", encoding="utf-8") as fh:
            fh.write(render_markdown(report, prompts_dir))
    return 0 if report.passed else 1


def _live_llm() -> tuple[LlmPort, str]:
    """The production Anthropic adapter, configured from the environment like every other command, and
    the URL its client sends requests to (which decides whether its answers are labelled live)."""
    from adr_review.adapters.llm import make_llm
    from adr_review.config import RepoConfig, Settings

    settings = Settings()
    llm = make_llm(settings, RepoConfig())
    if llm is None:
        raise RuntimeError(
            "--live needs ANTHROPIC_API_KEY (and optionally ANTHROPIC_BASE_URL); use --replay offline"
        )
    try:
        return llm, llm.endpoint()
    except (ValueError, RuntimeError) as exc:  # e.g. Bedrock without a region
        raise RuntimeError(f"--live: the model's endpoint is not configured: {exc}") from exc
