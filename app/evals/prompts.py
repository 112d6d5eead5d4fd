"""`adr-review eval prompts`: score every LLM step on its golden cases, offline (replay) or live.

Replay feeds each case's recorded answer through the production stage (run_recall / run_blindspots with
the model port answered from the recording: render -> call_prompt -> validation -> the pipeline's own
verification and guards), checks it against output_schema.json as well, and fails a prompt whose recordings
no longer match the request production would send (stale), with the exact command to re-record.
Live calls the model through the Anthropic adapter; `--record` writes what it answered.
See docs/golden-eval.md.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import logging
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from app.core.llm_json import NotJsonError, parse_json_answer, schema_errors
from app.core.results import Usage
from app.evals.golden import (
    COMMON_THRESHOLDS,
    SOURCE_FAKE_SERVER,
    SOURCE_HAND_WRITTEN,
    SOURCE_LIVE,
    CaseResult,
    CaseScore,
    Check,
    Evaluation,
    GoldenCase,
    GoldenError,
    RecordedRequest,
    RecordedUsage,
    Recording,
    Suite,
    check_thresholds,
    estimate_tokens,
    fmt_metric,
    golden_dir,
    load_cases,
    load_recording,
    ratio,
    request_chars,
    request_key,
    save_recording,
    suite_for,
)
from app.pipeline.ports import LlmError, LlmPort, LlmRequest, LlmResponse
from app.prompts import PROMPTS_DIR, Prompt, PromptError, load_prompt

Mode = Literal["replay", "live"]

# Files outside prompts/<name>/ that change what a prompt is sent or how its answers are scored.
# A change to one of them selects the listed prompts for --changed-since ("*" = every prompt).
SHARED_INPUTS: Mapping[str, tuple[str, ...]] = {
    "prompts/constitution.yaml": ("blindspot-devils-advocate",),
    "prompts/_golden/*": ("*",),  # the ADR copies the cases feed in
    "app/core/perspectives.py": ("blindspot-devils-advocate",),
    "app/core/citations.py": ("recall-pre-gate",),
    "app/pipeline/recall.py": ("recall-pre-gate",),
    "app/core/findings.py": ("blindspot-*",),
    "app/pipeline/blindspot.py": ("blindspot-*",),
    "app/pipeline/blindspot_answers.py": ("blindspot-*",),
    "app/core/adr.py": ("*",),
    "app/core/text.py": ("*",),
    "app/core/llm_json.py": ("*",),
    "app/prompts.py": ("*",),
    "app/pipeline/structured.py": ("*",),
    "app/evals/*": ("*",),
}

RERECORD_HELP = (
    "re-record with a key:  ANTHROPIC_API_KEY=... adr-review eval prompts --prompt {name} --live --record\n"
    "    hand-written answers (no key): check each answer in {folder} still answers the changed prompt "
    "(edit it if not), then:  adr-review eval prompts --prompt {name} --rekey-hand-written\n"
    "    then commit the updated *.recording.json files (see docs/golden-eval.md)"
)


# --- running ---------------------------------------------------------------------------------------


@dataclass
class PromptReport:
    name: str
    mode: Mode
    cases: list[CaseResult] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)

    @property
    def stale(self) -> list[CaseResult]:
        return [c for c in self.cases if c.status in ("stale", "missing", "unreadable")]

    @property
    def passed(self) -> bool:
        return not self.errors and not self.stale and all(c.ok for c in self.checks)

    @property
    def sources(self) -> dict[str, int]:
        return dict(Counter(c.source or "(none)" for c in self.cases))

    @property
    def usage_estimated(self) -> bool:
        return any(c.usage_estimated for c in self.cases)


@dataclass
class EvalReport:
    mode: Mode
    prompts: list[PromptReport]
    selected_by: str | None = None  # "--changed-since REF" when filtered
    skipped: list[str] = field(default_factory=list)  # prompts not selected

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.prompts)


def discover_prompts(prompts_dir: Path) -> list[str]:
    """Every prompt folder: one without golden cases is reported as failing, never skipped."""
    return sorted(p.parent.name for p in prompts_dir.glob("*/prompt.md"))


def run_prompt(
    name: str,
    *,
    prompts_dir: Path,
    mode: Mode,
    llm: LlmPort | None = None,
    record: bool = False,
    source: str = SOURCE_LIVE,
    base_url: str | None = None,
) -> PromptReport:
    report = PromptReport(name=name, mode=mode)
    try:
        prompt = load_prompt(name, prompts_dir)
    except PromptError as exc:
        report.errors.append(str(exc))
        return report
    suite = suite_for(name)
    if suite is None:
        report.errors.append(f"no eval suite knows prompt {name!r} (add one in app/evals/golden.py)")
        return report
    folder = golden_dir(prompt)
    cases, errors = load_cases(folder)
    report.errors.extend(errors)
    if not cases:
        report.errors.append(f"no golden cases in {folder}")
    for case in cases:
        report.cases.append(
            _run_case(case, prompt, suite, folder, mode, llm, record, source, base_url, report.recorded)
        )
    report.metrics = _metrics(report.cases, suite)
    thresholds = {**COMMON_THRESHOLDS, **suite.default_thresholds(), **eval_thresholds(prompt)}
    report.checks = check_thresholds(report.metrics, thresholds)
    return report


def eval_thresholds(prompt: Prompt) -> dict[str, float]:
    """`eval: {thresholds: {...}}` in meta.yaml (the top-level `thresholds` is the prompt's own business)."""
    section = prompt.meta.raw.get("eval") or {}
    raw = section.get("thresholds") if isinstance(section, Mapping) else None
    return {str(k): float(v) for k, v in (raw or {}).items()}


def _run_case(
    case: GoldenCase,
    prompt: Prompt,
    suite: Suite,
    folder: Path,
    mode: Mode,
    llm: LlmPort | None,
    record: bool,
    source: str,
    base_url: str | None,
    recorded: list[str],
) -> CaseResult:
    try:
        request = suite.request(case, prompt)
    except Exception as exc:  # a case the production renderer cannot take is the case's bug
        return CaseResult(case.id, "input_error", message=f"{type(exc).__name__}: {exc}")
    key = request_key(request)
    if mode == "replay":
        try:
            recording = load_recording(folder, case.id)
        except GoldenError as exc:
            return CaseResult(case.id, "unreadable", message=str(exc))
        if recording is None:
            return CaseResult(case.id, "missing", message="no recording")
        if recording.key != key:
            return CaseResult(
                case.id,
                "stale",
                message=f"recorded for {recording.key[:19]}…, the prompt now renders {key[:19]}…",
                source=recording.source,
            )
        answerer = _Answerer(replay=recording)
        answer_source = recording.source
    else:
        assert llm is not None, "live mode needs an LLM"
        answerer = _Answerer(live=llm)
        answer_source = source
    try:
        evaluation = suite.evaluate(case, prompt, answerer)
    except Exception as exc:  # production code choking on an answer is a finding, not a crash of the gate
        evaluation = Evaluation("input_error", message=f"{type(exc).__name__}: {exc}")
    result = CaseResult(
        case.id,
        evaluation.status,
        score=evaluation.score,
        message=evaluation.message,
        usage=evaluation.usage,
        usage_estimated=answerer.recording is not None and answerer.recording.usage.estimated,
        source=answer_source,
    )
    if answerer.response is None and result.status == "ok":
        result.status, result.message = "input_error", "the step under test was never called"
    if result.status == "ok":
        problems = _strict_schema_problems(answerer.response, prompt)
        if problems:  # the pipeline repaired or tolerated it; the contract the model was given did not
            result.status = "schema"
            result.message = "violates output_schema.json (the pipeline tolerated it): " + "; ".join(problems)
    if mode == "live" and record and answerer.response is not None and answerer.request is not None:
        save_recording(
            folder, _recording(case, prompt, answerer.request, answerer.response, source, base_url)
        )
        recorded.append(case.id)
    return result


def _strict_schema_problems(response: LlmResponse | None, prompt: Prompt) -> list[str]:
    if response is None:
        return []
    data = response.data
    if data is None:
        try:
            data = parse_json_answer(response.text)
        except NotJsonError as exc:
            return [str(exc)]
    return schema_errors(data, prompt.schema)


class _Answerer:
    """Stands in for the model: a recording (refusing any other request) or the live adapter."""

    def __init__(self, replay: Recording | None = None, live: LlmPort | None = None) -> None:
        self.recording = replay
        self.live = live
        self.request: LlmRequest | None = None
        self.response: LlmResponse | None = None

    def __call__(self, request: LlmRequest) -> LlmResponse:
        self.request = request
        if self.recording is not None:
            if request_key(request) != self.recording.key:
                raise LlmError("refused", "replay: the request differs from the one recorded")
            self.response = self.recording.response()
        else:
            assert self.live is not None
            self.response = self.live.complete(request)
        return self.response


def _recording(
    case: GoldenCase,
    prompt: Prompt,
    request: LlmRequest,
    response: LlmResponse,
    source: str,
    base_url: str | None,
) -> Recording:
    u = response.usage
    return Recording(
        case=case.id,
        prompt=prompt.name,
        key=request_key(request),
        source=source,
        model=u.model or request.model,
        date=date.today().isoformat(),
        usage=RecordedUsage(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_tokens,
            cache_write_tokens=u.cache_write_tokens,
            cost_usd=round(u.cost_usd, 6),
        ),
        request=_recorded_request(request, prompt),
        base_url=base_url,
        note=(
            "Answer of the local fake Messages API server (tests/fakes/messages_server.py), not of a model."
            if source == SOURCE_FAKE_SERVER
            else None
        ),
        text=response.text,
        data=response.data,
    )


def _recorded_request(request: LlmRequest, prompt: Prompt) -> RecordedRequest:
    return RecordedRequest(
        model=request.model,
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        prompt_files_hash=prompt.files_hash(),
    )


def _metrics(cases: Sequence[CaseResult], suite: Suite) -> dict[str, float]:
    answered = [c for c in cases if c.answered]
    valid = [c for c in answered if c.status == "ok"]
    usage = Usage()
    for c in cases:
        usage = usage + c.usage
    metrics: dict[str, float] = {
        "cases": float(len(cases)),
        "schema_valid_rate": ratio(len(valid), len(answered), empty=0.0),
        "case_pass_rate": ratio(sum(c.passed for c in answered), len(answered), empty=0.0),
    }
    scores: list[CaseScore] = [c.score for c in valid if c.score is not None]
    metrics.update(suite.metrics(scores))
    metrics.update(
        {
            "input_tokens": float(usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens),
            "output_tokens": float(usage.output_tokens),
            "cost_usd": round(usage.cost_usd, 4),
        }
    )
    return metrics


# --- re-keying hand-written answers --------------------------------------------------------------


def rekey_hand_written(name: str, prompts_dir: Path, price: PriceFn | None = None) -> list[str]:
    """Re-key the hand-written recordings of one prompt to what it renders now. Returns messages.

    Only answers labelled hand-written are touched: a model's recorded answer to an old prompt is not
    an answer to the new one, so those must be re-recorded live.
    """
    prompt = load_prompt(name, prompts_dir)
    suite = suite_for(name)
    if suite is None:
        return [f"{name}: no eval suite"]
    folder = golden_dir(prompt)
    cases, errors = load_cases(folder)
    messages = list(errors)
    for case in cases:
        try:
            request = suite.request(case, prompt)
            recording = load_recording(folder, case.id)
        except Exception as exc:
            messages.append(f"{name}/{case.id}: {type(exc).__name__}: {exc}")
            continue
        if recording is None:
            messages.append(
                f"{name}/{case.id}: no recording to re-key (write {case.id}.recording.json first)"
            )
            continue
        if recording.source != SOURCE_HAND_WRITTEN:
            messages.append(
                f"{name}/{case.id}: recorded from {recording.source!r}, not hand-written: re-record it with --live --record"
            )
            continue
        key = request_key(request)
        if recording.key == key:
            continue
        output = recording.text or json.dumps(recording.data, ensure_ascii=False)
        in_tokens, out_tokens = estimate_tokens(request_chars(request)), estimate_tokens(len(output))
        updated = recording.model_copy(
            update={
                "key": key,
                "model": request.model,
                "date": date.today().isoformat(),
                "request": _recorded_request(request, prompt),
                "usage": RecordedUsage(
                    input_tokens=in_tokens,
                    output_tokens=out_tokens,
                    cost_usd=round(price(request.model, in_tokens, out_tokens), 6) if price else 0.0,
                    estimated=True,
                ),
            }
        )
        save_recording(folder, updated)
        messages.append(f"{name}/{case.id}: re-keyed hand-written answer")
    return messages


class PriceFn:
    """USD for a call, from the adapter's price table (repo config `llm.prices`)."""

    def __init__(self) -> None:
        from app.config import LlmSettings

        self.settings = LlmSettings()

    def __call__(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.settings.price_for(model)
        if price is None:
            return 0.0
        return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


# --- selection by git diff ---------------------------------------------------------------------------


def changed_paths(ref: str, cwd: Path) -> tuple[Path, set[str]]:
    """(repo root, paths changed since the merge base of REF and HEAD, incl. uncommitted and untracked)."""

    def git(where: Path, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True)
        if done.returncode != 0:
            raise GoldenError(f"git {' '.join(args)}: {done.stderr.strip() or done.returncode}")
        return done.stdout

    root = Path(git(cwd, "rev-parse", "--show-toplevel").strip())
    try:
        base = git(root, "merge-base", ref, "HEAD").strip()
    except GoldenError:
        base = git(root, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()
    # Paths relative to the repository root: run from there (ls-files answers relative to its cwd).
    paths = set(git(root, "diff", "--name-only", "-z", base, "--").split("\0"))
    paths |= set(git(root, "ls-files", "-z", "--others", "--exclude-standard").split("\0"))
    return root, {p for p in paths if p}


def select_changed(names: Iterable[str], prompts_dir: Path, ref: str) -> list[str]:
    """The prompts whose folder, or a file they depend on (SHARED_INPUTS), changed since REF."""
    root, paths = changed_paths(ref, prompts_dir)
    try:
        rel = prompts_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = "prompts"
    names = list(names)
    chosen: set[str] = set()
    for path in paths:
        if path.startswith(f"{rel}/"):
            head = path[len(rel) + 1 :].split("/", 1)[0]
            if head in names:
                chosen.add(head)
        shared_key = path if not path.startswith(f"{rel}/") else "prompts/" + path[len(rel) + 1 :]
        for pattern, targets in SHARED_INPUTS.items():
            if fnmatch.fnmatch(shared_key, pattern):
                for target in targets:
                    chosen.update(n for n in names if fnmatch.fnmatch(n, target))
    return [n for n in names if n in chosen]


# --- output -------------------------------------------------------------------------------------------

LABELS: Mapping[str, str] = {
    "cases": "cases",
    "schema_valid_rate": "schema-valid rate",
    "case_pass_rate": "cases meeting every expectation",
    "citations_returned": "citations returned",
    "ids_dropped_not_in_candidates": "ids dropped: not in the candidates",
    "reasons_dropped_not_verbatim": "reasons dropped: not verbatim",
    "citations_dropped_other": "citations dropped: duplicate / over the cap",
    "kept_share": "share of citations kept",
    "expected_citations_found": "expected citations found",
    "forbidden_citations_present": "forbidden citations present",
    "category_coverage": "pre-mortem category coverage",
    "findings": "findings (after the guards)",
    "findings_critical": "findings: critical",
    "findings_high": "findings: high",
    "findings_medium": "findings: medium",
    "findings_low": "findings: low",
    "expected_findings_found": "expected findings found",
    "own_risk_duplicates_present": "duplicates of the ADR's own risks present",
    "dropped_by_guards": "findings dropped by the code guards",
    "severity_bounds_met": "cases within their severity bounds",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "cost_usd": "cost (USD)",
}


def _rows(report: PromptReport) -> list[tuple[str, str, str, str]]:
    bounds = {c.metric: c for c in report.checks}
    rows = []
    order = [m for m in LABELS if m in report.metrics] + [m for m in report.metrics if m not in LABELS]
    for metric in order:
        value = report.metrics.get(metric)
        check = bounds.get(metric)
        shown = fmt_metric(value, metric)
        if metric in ("input_tokens", "output_tokens", "cost_usd") and report.usage_estimated:
            shown = f"~{shown}"
        rows.append(
            (
                LABELS.get(metric, metric),
                shown,
                check.describe() if check else "",
                ("ok" if check.ok else "FAIL") if check else "",
            )
        )
    for check in report.checks:  # a threshold on a metric this prompt does not have
        if check.metric not in report.metrics:
            rows.append((check.metric, "—", check.describe(), "FAIL (no such metric)"))
    return rows


def _problems(report: PromptReport) -> list[str]:
    lines = list(report.errors)
    for c in report.cases:
        if c.status == "ok":
            lines.extend(f"{c.case_id}: {f}" for f in (c.score.failures if c.score else []))
        else:
            lines.append(f"{c.case_id}: {c.status}: {c.message}".rstrip(": "))
    return lines


def _stale_help(report: PromptReport, prompts_dir: Path) -> str | None:
    if not report.stale:
        return None
    ids = ", ".join(c.case_id for c in report.stale)
    folder = prompts_dir / report.name / "golden"
    return (
        f"{report.name}: {len(report.stale)} of {len(report.cases)} recordings are stale or missing ({ids}): "
        "the prompt, its schema, its model parameters or the rendered inputs changed since they were recorded.\n"
        "    " + RERECORD_HELP.format(name=report.name, folder=folder)
    )


def render_text(report: EvalReport, prompts_dir: Path) -> str:
    out: list[str] = []
    if report.selected_by:
        out.append(f"selected by {report.selected_by}: {', '.join(p.name for p in report.prompts) or 'none'}")
    for p in report.prompts:
        status = "PASS" if p.passed else "FAIL"
        sources = ", ".join(f"{n}× {s}" for s, n in p.sources.items())
        out.append(f"\n{p.name}  [{p.mode}]  {status}   answers: {sources or '—'}")
        rows = _rows(p)
        w = [max([len(r[i]) for r in rows] + [6]) for i in range(4)]
        out.append(f"  {'metric':<{w[0]}}  {'value':>{w[1]}}  {'gate':<{w[2]}}  ")
        for r in rows:
            out.append(f"  {r[0]:<{w[0]}}  {r[1]:>{w[1]}}  {r[2]:<{w[2]}}  {r[3]}".rstrip())
        for line in _problems(p):
            out.append(f"  - {line}")
        if p.recorded:
            out.append(f"  recorded: {', '.join(p.recorded)}")
        help_text = _stale_help(p, prompts_dir)
        if help_text:
            out.append("  " + help_text)
    out.append(
        f"\n{'PASS' if report.passed else 'FAIL'}: {len(report.prompts)} prompt(s), mode {report.mode}"
    )
    return "\n".join(out) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: EvalReport, prompts_dir: Path) -> str:
    """GitHub-flavoured Markdown for $GITHUB_STEP_SUMMARY."""
    verdict = "✅ pass" if report.passed else "❌ fail"
    out = [f"## Golden eval of the prompts ({report.mode}): {verdict}", ""]
    if report.selected_by:
        out += [
            f"Selected by `{report.selected_by}`: {', '.join(p.name for p in report.prompts) or 'none'}.",
            "",
        ]
    for p in report.prompts:
        sources = ", ".join(f"{n}× {s}" for s, n in p.sources.items())
        out += [
            f"### `{p.name}` — {'pass' if p.passed else '**FAIL**'}",
            "",
            f"Answers: {sources or '—'}",
            "",
        ]
        out += ["| metric | value | gate | |", "|---|---:|---|---|"]
        out += [f"| {_md_cell(a)} | {b} | {_md_cell(c)} | {d} |" for a, b, c, d in _rows(p)]
        problems = _problems(p)
        if problems:
            out += ["", "<details><summary>cases that missed something</summary>", ""]
            out += [f"- {_md_cell(line)}" for line in problems]
            out += ["", "</details>"]
        help_text = _stale_help(p, prompts_dir)
        if help_text:
            out += ["", "```", help_text, "```"]
        out.append("")
    if any(p.usage_estimated for p in report.prompts):
        out.append(
            "_~ tokens and cost of hand-written answers are estimates (4 characters a token); nothing was billed._"
        )
    return "\n".join(out) + "\n"


def report_json(report: EvalReport) -> dict[str, Any]:
    return {
        "mode": report.mode,
        "passed": report.passed,
        "selected_by": report.selected_by,
        "skipped": report.skipped,
        "prompts": [
            {
                "name": p.name,
                "passed": p.passed,
                "metrics": p.metrics,
                "checks": [
                    {"metric": c.metric, "bound": c.bound, "limit": c.limit, "value": c.value, "ok": c.ok}
                    for c in p.checks
                ],
                "errors": p.errors,
                "sources": p.sources,
                "recorded": p.recorded,
                "cases": [
                    {
                        "id": c.case_id,
                        "status": c.status,
                        "passed": c.passed,
                        "message": c.message,
                        "source": c.source,
                        "counts": c.score.counts if c.score else {},
                        "failures": c.score.failures if c.score else [],
                    }
                    for c in p.cases
                ],
            }
            for p in report.prompts
        ],
    }


# --- command line -------------------------------------------------------------------------------------


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
    pipeline_log = logging.getLogger("app.pipeline")
    level = pipeline_log.level
    pipeline_log.setLevel(logging.ERROR)
    try:
        return _run(args)
    finally:
        pipeline_log.setLevel(level)


def _run(args: argparse.Namespace) -> int:
    prompts_dir: Path = args.prompts_dir
    mode: Mode = args.mode
    if args.record and mode != "live":
        print(
            "--record needs --live (it records what the model answers); "
            "hand-written answers are re-keyed with --rekey-hand-written",
            file=sys.stderr,
        )
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
            for message in rekey_hand_written(name, prompts_dir, price):
                print(message, file=sys.stderr)

    llm: LlmPort | None = None
    source, base_url = SOURCE_LIVE, None
    if mode == "live":
        try:
            llm, base_url = _live_llm()
        except RuntimeError as exc:
            print(str(exc), file=sys.stderr)
            return 2
        source = SOURCE_FAKE_SERVER if _is_loopback(base_url) else SOURCE_LIVE

    report = EvalReport(mode=mode, prompts=[], selected_by=selected_by, skipped=skipped)
    for name in names:
        report.prompts.append(
            run_prompt(
                name,
                prompts_dir=prompts_dir,
                mode=mode,
                llm=llm,
                record=args.record,
                source=source,
                base_url=base_url,
            )
        )

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


def _is_loopback(base_url: str | None) -> bool:
    host = urlparse(base_url or "").hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


def _live_llm() -> tuple[LlmPort, str | None]:
    """The production Anthropic adapter, configured from the environment like every other command."""
    from app.adapters.llm import make_llm
    from app.config import RepoConfig, Settings

    settings = Settings()
    llm = make_llm(settings, RepoConfig())
    if llm is None:
        raise RuntimeError(
            "--live needs ANTHROPIC_API_KEY (and optionally ANTHROPIC_BASE_URL); use --replay offline"
        )
    return llm, settings.anthropic_base_url
