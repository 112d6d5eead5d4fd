"""The noise budget (issue 17): which findings a comment shows — most severe first, then most
confident, at most `limit`, none below the Judge's confidence threshold — and how many were held back
for each reason. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from adr_review.core.findings import actionability_rank, severity_rank
from adr_review.core.results import Finding


def rank_findings(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """Most severe first, then most confident (un-judged counts as sure), then most urgent action,
    then the order they came in."""
    indexed = sorted(
        enumerate(findings),
        key=lambda p: (
            severity_rank(p[1].severity),
            -(1.0 if p[1].confidence is None else p[1].confidence),
            actionability_rank(p[1].actionability),
            p[0],
        ),
    )
    return tuple(f for _, f in indexed)


def budget_findings(
    findings: Sequence[Finding], limit: int, min_confidence: float
) -> tuple[tuple[Finding, ...], int, int]:
    """The noise budget: (shown, held back below `min_confidence`, held back beyond `limit`).

    A finding without a confidence (the Judge did not answer) is never held back for it: the budget
    must not turn a Judge failure into silence; the cap still applies.
    """
    sure = [f for f in findings if f.confidence is None or f.confidence >= min_confidence]
    shown, over = cap_findings(sure, limit)
    return shown, len(findings) - len(sure), over


def cap_findings(findings: Sequence[Finding], limit: int) -> tuple[tuple[Finding, ...], int]:
    """The `limit` most important findings, and how many more there were."""
    ranked = rank_findings(findings)
    limit = max(0, limit)
    return ranked[:limit], max(0, len(ranked) - limit)
