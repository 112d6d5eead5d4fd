"""`adr-review guard --adr-dir DIR --diff FILE [--title TEXT] [--body TEXT] [--json] [--offline]`

The accepted decisions of DIR that a code change touches (app/adr_review/pipeline/code_guard/guard.py), printed as the
comment the guard would post, or a one-line note when it stays silent (the usual answer). --diff is
a unified diff (`git diff`, `git show`, a pull request's .diff); `-` reads it from stdin. With an API
key (the provider and key handling of `adr-review review`) each listed decision is checked by the
model (prompts/guard-check, app/adr_review/pipeline/code_guard/guard_check.py); --offline, or no key, lists them
without a model. A refused key prints the error and exits 1 (the comment still prints, degraded).
--json prints {"decisions": [...], "silent_reason", "floor", "pool_size", "budget", "ignored",
"dropped", "candidates", "check"}; `decisions` is the list the comment shows (empty when silent), each
with path (relative to DIR), id, title, status, evidence, reason, decision, section, via,
diff_evidence ([{path, change, line, text}]) and `verdict` (the verified model answer, or null);
`check` is null offline, else {model, unverified, failures, usage}.
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
    repo_config,
    retrieval_config,
    setup_logging,
)

if TYPE_CHECKING:
    from adr_review.core.guard import Implicated
    from adr_review.core.guard_check import GuardVerdict
    from adr_review.pipeline.code_guard.guard import GuardResult
    from adr_review.pipeline.code_guard.guard_check import GuardCheckResult

PROG = "adr-review guard"


def configure(parser: argparse.ArgumentParser) -> None:
    add_index_arguments(parser)
    parser.add_argument("--diff", required=True, help="a unified diff file, or - for stdin")
    parser.add_argument("--title", default="", help="the pull request's title")
    parser.add_argument("--body", default="", help="the pull request's description")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--offline", action="store_true", help="no model call, even with an API key")


def reason_of(d: Implicated, floor: float) -> str:
    terms = ", ".join(d.terms[:6])
    via = f"; matched through {d.via.adr_id}, which it supersedes" if d.via is not None else ""
    why = (
        f"named in the pull request (evidence {d.probability:.2f})"
        if d.named
        else f"evidence {d.probability:.2f} >= floor {floor:.3f}"
    )
    return f"{why}; the diff shares {terms}{via}"


def verdict_json(v: GuardVerdict) -> dict[str, Any]:
    line = v.diff_line
    return {
        "verdict": v.verdict,
        "adr_quote": v.adr_quote,
        "section": v.section,
        "diff_quote": v.diff_quote,
        "diff_line": {
            "path": line.path,
            "change": line.change,
            "line": line.line.number,
            "text": line.line.text,
        }
        if line is not None
        else None,
        "reason": v.reason,
        "confidence": v.confidence,
        "unverified": v.unverified,
    }


def decision_json(d: Implicated, floor: float, check: GuardCheckResult | None = None) -> dict[str, Any]:
    verdict = check.verdict_for(d.adr.path) if check is not None else None
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
        "named": d.named,
        "diff_evidence": [
            {"path": e.path, "change": e.change, "line": e.number, "text": e.text} for e in d.lines
        ],
        "verdict": verdict_json(verdict) if verdict is not None else None,
    }


def check_json(check: GuardCheckResult | None) -> dict[str, Any] | None:
    if check is None:
        return None
    return {
        "model": check.model,
        "unverified": [{"path": v.path, "claimed_adr_quote": v.claimed_adr_quote,
                        "claimed_diff_quote": v.claimed_diff_quote} | verdict_json(v) for v in check.unverified],
        "failures": [{"path": f.path, "kind": f.kind, "message": f.message} for f in check.failures],
        "usage": {"calls": check.usage.calls, "input_tokens": check.usage.input_tokens,
                  "output_tokens": check.usage.output_tokens, "cost_usd": round(check.usage.cost_usd, 6)},
    }  # fmt: skip


def result_json(result: GuardResult) -> dict[str, Any]:
    q = result.query
    return {
        "decisions": [decision_json(d, result.floor, result.check) for d in _ordered(result)],
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
        "check": check_json(result.check),
    }


def _ordered(result: GuardResult) -> list[Implicated]:
    """The decisions in the comment's order: those with a verified verdict first, conflicts first."""
    order = [v.path for v in result.check.shown] if result.check is not None else []
    n = len(order)
    return sorted(result.decisions, key=lambda d: order.index(d.adr.path) if d.adr.path in order else n)


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
    from adr_review.config import Settings
    from adr_review.core.render import render_guard
    from adr_review.pipeline.code_guard.guard import run_guard
    from adr_review.pipeline.code_guard.guard_check import PROMPT_NAME
    from adr_review.pipeline.structured import StepOverrides
    from adr_review.prompts import packaged

    try:
        repo = repo_config(args.config)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    settings = Settings()
    llm = None
    if not args.offline and settings.anthropic_api_key:
        from adr_review.adapters.llm import make_llm
        from adr_review.entrypoints.llm_auth import AuthWatch

        made = make_llm(settings, repo)
        llm = AuthWatch(made) if made is not None else None
    opened = open_synced(PROG, args, config, progress=False)
    if isinstance(opened, int):
        return opened
    index, synced = opened
    result = run_guard(
        diff,
        index,
        synced.adrs,
        title=args.title,
        body=args.body,
        llm=llm,
        prompts=packaged() if llm is not None else None,
        overrides=StepOverrides.from_config(repo.llm, PROMPT_NAME),
    )
    for cut in result.query.cut:
        print(f"{PROG}: budget: {cut}", file=sys.stderr)
    if args.json:
        print(json.dumps(result_json(result), indent=2, ensure_ascii=False))
    else:
        body = render_guard(result.decisions, result.query.cut, result.floor, check=result.check)
        if not result.decisions and result.silent_reason:
            body = body.rstrip("\n") + f" ({result.silent_reason})\n"
        sys.stdout.write(body)
    if result.check is not None:
        for f in result.check.failures:
            print(f"{PROG}: model check of {f.path} failed ({f.kind}): {f.message}", file=sys.stderr)
    if llm is not None and llm.refused:
        from adr_review.adapters.llm import provider_of
        from adr_review.entrypoints.llm_auth import refused_message

        print(
            f"{PROG}: error: {refused_message(llm.refused, provider_of(settings, repo), 'cli')}",
            file=sys.stderr,
        )
        return 1
    return 0
