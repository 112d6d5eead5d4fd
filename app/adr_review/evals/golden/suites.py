"""Which suite scores which prompt: the one place that knows every suite (the runner takes one)."""

from __future__ import annotations

from adr_review.evals.golden.scoring import Suite
from adr_review.evals.golden.suite_blindspot import BLINDSPOT_PROMPTS, BlindSpotSuite
from adr_review.evals.golden.suite_cover import CoverCheckSuite
from adr_review.evals.golden.suite_guard import GuardCheckSuite
from adr_review.evals.golden.suite_recall import RecallSuite


def suite_for(prompt_name: str) -> Suite | None:
    if prompt_name == RecallSuite.prompt_name:
        return RecallSuite()
    if prompt_name in BLINDSPOT_PROMPTS:
        return BlindSpotSuite(prompt_name)
    if prompt_name == GuardCheckSuite.prompt_name:
        return GuardCheckSuite()
    if prompt_name == CoverCheckSuite.prompt_name:
        return CoverCheckSuite()
    return None
