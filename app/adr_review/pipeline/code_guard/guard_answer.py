"""The guard-check answer: the contract the model is given for one implicated ADR.

GuardCheckAnswer is the one definition of the answer's shape: prompts/guard-check/output_schema.json is
generated from it (app/adr_review/pipeline/answer_schema.py). The stage validates answers against that
schema strictly (an answer about one ADR has no items to drop one by one); what the quotes claim is
checked in app/adr_review/core/guard_check.py.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class GuardCheckAnswer(BaseModel):
    """Whether a code change keeps or breaks one decision, with a quote from each side."""

    model_config = ConfigDict(extra="forbid", title="guard-check answer")
    verdict: Literal["conflicts", "consistent", "unclear"] = Field(
        description=(
            "conflicts: the change does what the decision rules out, or undoes what it requires; "
            "consistent: the change follows the decision; unclear: the decision does not say whether "
            "this change is allowed, or the lines shown are not enough to tell."
        )
    )
    adr_quote: str = Field(
        max_length=400,
        description=(
            "A verbatim quote (one sentence or clause of ONE paragraph or list item) from the ADR's "
            "Decision or Consequences section that the verdict rests on; empty only for unclear."
        ),
    )
    diff_quote: str = Field(
        max_length=300,
        description=(
            "A verbatim part of ONE added or removed line of the change (without its +/- mark) that "
            "the verdict rests on; empty only for unclear."
        ),
    )
    reason: str = Field(
        min_length=1,
        max_length=500,
        description="One or two sentences: why the quoted line keeps, breaks or is not covered by the decision.",
    )
    confidence: float = Field(ge=0, le=1, description="How sure the verdict is, 0 to 1.")
