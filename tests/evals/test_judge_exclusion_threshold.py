"""MIN_SUBJECT_OVERLAP against the golden Judge cases it was chosen on (app/adr_review/evals/golden/judge_overlap.py):
every recorded exclusion holds, and the same passages never hold for another topic's finding."""

from __future__ import annotations

from adr_review.core.finding_checks import MIN_SUBJECT_OVERLAP
from adr_review.evals.golden.judge_overlap import exclusion_pairs, report


def test_the_threshold_separates_the_golden_exclusions_from_other_subjects() -> None:
    held, off = exclusion_pairs()
    assert len(held) >= 5 and len(off) >= 60  # the cases are there
    assert all(p.overlap >= MIN_SUBJECT_OVERLAP for p in held), [
        p for p in held if p.overlap < MIN_SUBJECT_OVERLAP
    ]
    assert all(p.overlap < MIN_SUBJECT_OVERLAP for p in off), [
        p for p in off if p.overlap >= MIN_SUBJECT_OVERLAP
    ]
    # the closest other-subject pair is what the threshold sits just above
    assert max(p.overlap for p in off) > MIN_SUBJECT_OVERLAP - 0.05
    assert "<- MIN_SUBJECT_OVERLAP" in report(held, off)
