"""The Judge-exclusion band against the golden Judge cases (app/adr_review/evals/golden/judge_overlap.py): every
recorded exclusion reaches the independent check rather than being rejected by the code, and a claim
with every term in common but covering nothing (Kuma MADR 099) is not accepted by the code either."""

from __future__ import annotations

from adr_review.core.finding_checks import (
    UNSURE_SUBJECT_OVERLAP,
    check_exclusion,
    judge_exclusions,
    subject_overlap,
)
from adr_review.evals.golden.judge_overlap import as_finding, exclusion_pairs, judge_cases, report

# Kuma MADR 099's Decision; its golden critics argue with it (benchmarks/judge_band.py, own-ADR pairs,
# read by hand: none of the three is covered by it).
DECISION = "Handle Workload name collisions in the Workload controller with clear error messages."
ARGUING = {"da-3": 0.875, "pm-1": 0.875, "ad-2": 1.0}


def test_every_golden_exclusion_reaches_the_check_and_the_lower_edge_sits_above_most_other_subjects() -> None:
    held, off = exclusion_pairs()
    assert len(held) >= 5 and len(off) >= 60  # the cases are there
    assert all(p.overlap >= UNSURE_SUBJECT_OVERLAP for p in held), [
        p for p in held if p.overlap < UNSURE_SUBJECT_OVERLAP
    ]
    below = sum(p.overlap < UNSURE_SUBJECT_OVERLAP for p in off)
    assert below / len(off) > 0.7  # 61 of 78 when measured: rejected with no call
    assert "<- UNSURE_SUBJECT_OVERLAP" in report(held, off)


def test_a_decision_sentence_the_findings_argue_with_goes_to_the_check_at_any_overlap() -> None:
    (case,) = [c for c in judge_cases() if c.case == "en-kuma-099-multiple-meshes"]
    for fid, overlap in ARGUING.items():
        finding = as_finding(case.items[fid])
        assert subject_overlap(DECISION, finding, case.adr.title) == overlap  # above the old 0.35
        verdict = check_exclusion(DECISION, finding, case.adr)
        assert (verdict.rejected, verdict.covered_in) == (None, "decision"), fid
        claims = judge_exclusions([(fid, DECISION)], {fid: finding}, case.adr)
        assert (claims.exclusions, [u.fid for u in claims.unsure]) == ((), [fid]), fid
