"""The eval report as a text table (stdout), Markdown ($GITHUB_STEP_SUMMARY) and JSON (--json)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adr_review.evals.golden.runner import EvalReport, PromptReport
from adr_review.evals.golden.scoring import fmt_metric

RERECORD_HELP = (
    "re-record with a key:  ANTHROPIC_API_KEY=... adr-review eval prompts --prompt {name} --live --record\n"
    "    hand-written answers (no key):  adr-review eval prompts --prompt {name} --rekey-hand-written\n"
    "    (an answer whose request changed stays unverified until it is answered anew: {folder})\n"
    "    then commit the updated *.recording.json files (see docs/golden-eval.md)"
)

LABELS: Mapping[str, str] = {
    "cases": "cases",
    "schema_valid_rate": "schema-valid rate",
    "case_pass_rate": "cases meeting every expectation",
    "citations_returned": "citations returned",
    "ids_dropped_not_in_candidates": "ids dropped: not in the candidates",
    "reasons_dropped_not_verbatim": "reasons dropped: not verbatim",
    "reasons_dropped_too_short": "reasons dropped: too short",
    "citations_dropped_other": "citations dropped: duplicate / over the cap",
    "kept_share": "share of citations kept",
    "expected_citations_found": "expected citations found",
    "forbidden_citations_present": "forbidden citations present",
    "precision_at_k": "precision@k (kept citations relevant in the qrels)",
    "recall_at_k": "recall@k (qrels-relevant candidates cited)",
    "relevance_high_share": "relevance distribution: high",
    "relevance_med_share": "relevance distribution: med",
    "relevance_low_share": "relevance distribution: low",
    "category_coverage": "pre-mortem category coverage",
    "findings": "findings (after the guards)",
    "findings_critical": "findings: critical",
    "findings_high": "findings: high",
    "findings_medium": "findings: medium",
    "findings_low": "findings: low",
    "expected_findings_found": "expected findings found",
    "own_risk_duplicates_present": "duplicates of the ADR's own risks present",
    "findings_unverified": "findings unverified (quote not in the ADR / unknown ADR)",
    "quote_verified_rate": "findings whose quote verifies",
    "output_language_rate": "findings written in the expected language",
    "exclusions": "exclusions (already covered by the ADR)",
    "exclusions_unverified": "Judge exclusions naming no real passage",
    "exclusions_rejected": "Judge exclusions outside a covering section or off the subject (put back)",
    "expected_exclusions_found": "expected exclusions found",
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
        elif metric in report.spread and report.spread[metric][0] != report.spread[metric][1]:
            lo, hi, sd = report.spread[metric]
            shown = f"{shown} [{fmt_metric(lo, metric)}–{fmt_metric(hi, metric)}, sd {sd:.2f}]"
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
        if c.rekeyed:
            lines.append(
                f"{c.case_id}: UNVERIFIED: its answer was moved to this key (re-keyed), not answered anew"
            )
        for i, sample in enumerate(c.samples or [c]):
            where = f"{c.case_id}" + (f" (sample {i + 1})" if len(c.samples) > 1 else "")
            if sample.status == "ok":
                lines.extend(f"{where}: {f}" for f in (sample.score.failures if sample.score else []))
            else:
                lines.append(f"{where}: {sample.status}: {sample.message}".rstrip(": "))
    return lines


REKEYED_HELP = (
    "{name}: {n} of {total} recordings were re-keyed by --rekey-hand-written ({ids}): their answers were "
    "written for an earlier request, so nothing shows that the changed prompt still gets such answers. "
    "The gate does not pass on them.\n"
    "    with a key:     ANTHROPIC_API_KEY=... adr-review eval prompts --prompt {name} --live --record\n"
    "    without a key:  write a new answer by hand for the new request: replace the recording with a new one "
    '(`"key": "unkeyed"`, no `answered_key`), then --rekey-hand-written keys it. Deleting the `rekeyed` note '
    "verifies nothing: `answered_key` must be the key (see docs/golden-eval.md)"
)


def _rekeyed_help(report: PromptReport) -> str | None:
    if not report.rekeyed:
        return None
    return REKEYED_HELP.format(
        name=report.name,
        n=len(report.rekeyed),
        total=len(report.cases),
        ids=", ".join(c.case_id for c in report.rekeyed),
    )


def _answers(report: PromptReport) -> str:
    sources = ", ".join(f"{n}× {s}" for s, n in report.sources.items()) or "—"
    if report.rekeyed:
        sources += f" ({len(report.rekeyed)} re-keyed: UNVERIFIED)"
    if report.samples > 1:
        sources += f"; {report.samples} samples per case, metrics are their mean [min–max, sd]"
    return sources


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
        out.append(f"\n{p.name}  [{p.mode}]  {status}   answers: {_answers(p)}")
        rows = _rows(p)
        w = [max([len(r[i]) for r in rows] + [6]) for i in range(4)]
        out.append(f"  {'metric':<{w[0]}}  {'value':>{w[1]}}  {'gate':<{w[2]}}  ")
        for r in rows:
            out.append(f"  {r[0]:<{w[0]}}  {r[1]:>{w[1]}}  {r[2]:<{w[2]}}  {r[3]}".rstrip())
        for line in _problems(p):
            out.append(f"  - {line}")
        if p.recorded:
            out.append(f"  recorded: {', '.join(p.recorded)}")
        for help_text in (_stale_help(p, prompts_dir), _rekeyed_help(p)):
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
        out += [
            f"### `{p.name}` — {'pass' if p.passed else '**FAIL**'}",
            "",
            f"Answers: {_answers(p)}",
            "",
        ]
        out += ["| metric | value | gate | |", "|---|---:|---|---|"]
        out += [f"| {_md_cell(a)} | {b} | {_md_cell(c)} | {d} |" for a, b, c, d in _rows(p)]
        problems = _problems(p)
        if problems:
            out += ["", "<details><summary>cases that missed something</summary>", ""]
            out += [f"- {_md_cell(line)}" for line in problems]
            out += ["", "</details>"]
        for help_text in (_stale_help(p, prompts_dir), _rekeyed_help(p)):
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
                "samples": p.samples,
                "spread": {m: {"min": lo, "max": hi, "sd": sd} for m, (lo, hi, sd) in p.spread.items()},
                "rekeyed": [c.case_id for c in p.rekeyed],
                "cases": [
                    {
                        "id": c.case_id,
                        "status": c.status,
                        "passed": c.passed,
                        "rekeyed": c.rekeyed,
                        "message": c.message,
                        "source": c.source,
                        "counts": c.score.counts if c.score else {},
                        "failures": c.score.failures if c.score else [],
                        "samples": [
                            {"status": x.status, "counts": x.score.counts if x.score else {}}
                            for x in c.samples
                        ],
                    }
                    for c in p.cases
                ],
            }
            for p in report.prompts
        ],
    }
