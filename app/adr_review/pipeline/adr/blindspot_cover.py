"""The independent check of the Judge exclusions (issue 24, CoVe-style).

An exclusion in a covering section whose passage shares enough of the finding's terms (at least
finding_checks.UNSURE_SUBJECT_OVERLAP; no share is enough for the code to accept it alone)
is neither accepted nor rejected by the code: one call per such exclusion
asks a fresh model, given ONLY the finding (its title and gap) and the quoted passage, never the Judge's
reasoning nor the rest of the ADR, whether the passage addresses this risk. Only `yes` keeps the
exclusion; `no`, `partly`, a failed, truncated or non-JSON call, or a check past the prompt's
`max_checks` shows the finding (fail open to showing). One call per exclusion rather than one per ADR,
so that no verdict can lean on another. No exclusion to check, no call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adr_review.core.finding_checks import UnsureClaim
from adr_review.core.results import INTERNAL_ERROR, StageError, Usage
from adr_review.core.text import fold_whitespace
from adr_review.pipeline.adr.blindspot_answers import CoverCheckAnswer
from adr_review.pipeline.adr.blindspot_nodes import (
    UNTRUSTED_ADR_RULE,
    NodeContext,
    as_data,
    memo_step,
    meta_int,
)
from adr_review.pipeline.ports import InfrastructureError
from adr_review.pipeline.structured import StepFailed
from adr_review.prompts import PromptError

log = logging.getLogger(__name__)

COVER_CHECK_PROMPT = "blindspot-cover-check"
NODE = "cover_check"
MAX_CHECKS = 3  # per ADR, unless meta.yaml `max_checks` lowers it


@dataclass(frozen=True)
class CoverChecks:
    confirmed: tuple[bool, ...]  # one per unsure claim, in order: True only for a `yes`
    usage: Usage
    errors: tuple[StageError, ...] = ()
    labels: tuple[str | None, ...] = ()  # the check's answers (None: not asked, or no valid answer)


def check_variables(claim: UnsureClaim, language: Mapping[str, Any]) -> dict[str, Any]:
    """What the check is given: the finding and the passage, as data, after the untrusted-data rule."""
    return {
        "language_name": language["language_name"],
        "untrusted_rule": UNTRUSTED_ADR_RULE,
        "finding_title": fold_whitespace(as_data(claim.finding.title)),
        "finding_gap": as_data(claim.finding.gap),
        "section": fold_whitespace(as_data(claim.exclusion.section or claim.exclusion.covered_in)),
        "passage": as_data(claim.exclusion.quote),
    }


def run_cover_checks(ctx: NodeContext, base: Mapping[str, Any], unsure: Sequence[UnsureClaim]) -> CoverChecks:
    """Ask the check for each unsure claim (see the module doc); never raises for a model problem."""
    if not unsure:
        return CoverChecks((), Usage())
    try:
        prompt = ctx.prompts.prompt(COVER_CHECK_PROMPT)
    except PromptError as exc:
        return CoverChecks((False,) * len(unsure), Usage(), (StageError(NODE, f"prompt: {exc}"),))
    limit = min(meta_int(prompt, "max_checks", MAX_CHECKS), MAX_CHECKS)
    confirmed: list[bool] = []
    labels: list[str | None] = []
    usage = Usage()
    errors: list[StageError] = []
    for i, claim in enumerate(unsure):
        labels.append(None)
        if i >= limit:
            confirmed.append(False)
            continue
        try:
            answer, paid = memo_step(
                ctx, f"{NODE}:{claim.fid}", NODE, prompt, check_variables(claim, base), CoverCheckAnswer
            )
        except StepFailed as exc:
            log.warning("blindspot_node_failed", extra={"node": NODE, "kind": exc.kind, "error": exc.message})
            usage = usage + exc.usage
            errors.append(StageError(NODE, f"{exc.kind}: {exc.message}"))
            confirmed.append(False)
            continue
        except InfrastructureError:
            raise
        except Exception:  # advisory: a crash shows the finding
            log.exception("blindspot_node_crashed", extra={"node": NODE})
            errors.append(StageError(NODE, INTERNAL_ERROR))
            confirmed.append(False)
            continue
        assert isinstance(answer, CoverCheckAnswer)
        usage = usage + paid
        labels[-1] = answer.covers
        confirmed.append(answer.covers == "yes")
    return CoverChecks(tuple(confirmed), usage, tuple(dict.fromkeys(errors)), tuple(labels))
