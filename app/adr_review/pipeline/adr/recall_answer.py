"""The recall-pre-gate answer: the contract the model is given, and the looser check the stage applies.

RecallAnswer is the one definition of the answer's shape: prompts/recall-pre-gate/output_schema.json is
generated from it (app/adr_review/pipeline/answer_schema.py). The stage does not validate against it: an unknown
relevance, a sixth item or a foreign id are repaired or dropped per item by the verification
(app/adr_review/core/citations.py, counted) instead of failing the whole answer, so the boundary only checks that
`citations` is a list of objects (`answer_problems`). The golden eval still holds recordings to the
full contract.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

ADR_ID_PATTERN = r"^(ADR-\d+(-\d+)*|[A-Za-z0-9][A-Za-z0-9._:/-]{0,119})$"


# No docstring: pydantic would send it to the model as the item's description.
class RecallCitation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    adr_id: str = Field(
        description="The candidate's id exactly as listed, e.g. ADR-0012.", pattern=ADR_ID_PATTERN
    )
    relevance: Literal["high", "med", "low"]
    relevance_reason: str = Field(
        min_length=1,
        max_length=400,
        description=(
            "A verbatim quote (1-2 lines: a sentence or clause, never a lone word) from ONE paragraph, "
            "list item or table cell of this candidate's summary (of the proposal only when the summary "
            "has nothing to quote), in its original language."
        ),
    )


class RecallAnswer(BaseModel):
    """Up to 5 past ADRs from the candidate list that a reviewer of the proposal should read."""

    model_config = ConfigDict(extra="forbid", title="recall-pre-gate answer")
    # The prompt asks for at most 5; the repo config's recall.max_citations caps what is shown.
    citations: list[RecallCitation] = Field(min_length=0, max_length=5)


class _AnswerShape(BaseModel):
    """The boundary check on the model's answer: a list of objects under `citations`."""

    model_config = ConfigDict(extra="ignore")
    citations: list[dict[str, Any]]


def answer_problems(data: Any) -> list[str]:
    try:
        _AnswerShape.model_validate(data, strict=True)
    except ValidationError as exc:
        return [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:5]]
    return []
