"""The eval report as a text table (stdout), Markdown ($GITHUB_STEP_SUMMARY) and JSON (--json)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.evals.golden.runner import EvalReport, PromptReport
from app.evals.golden.scoring import fmt_metric

RERECORD_HELP = (
    "re-record with a key:  ANTHROPIC_API_KEY=... adr-review eval prompts --prompt {name} --live --record\n"
    "    hand-written answers (no key): check each answer in {folder} still answers the changed prompt "
    "(edit it if not), then:  adr-review eval prompts --prompt {name} --rekey-hand-written\n"
    "    then commit the updated *.recording.json files (see docs/golden-eval.md)"
)

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
