"""Each blind-spot prompt, its output_schema.json and the code say the same thing: how many items a
critic gives, and what the Judge's confidence anchors are around the threshold that holds findings back."""

from __future__ import annotations

from pathlib import Path

import pytest

from adr_review.config import BlindSpotConfig
from adr_review.core.text import fold_whitespace
from adr_review.pipeline.adr.blindspot_answers import (
    CONFIDENCE_ANCHORS,
    MAX_ANALOGIES,
    MAX_COUNTER_ARGUMENTS,
    MAX_SCENARIOS,
    PremortemAnswer,
)
from adr_review.prompts import PromptFiles
from tests.fakes.blindspot_answers import pm_answer

PROMPTS = PromptFiles(Path(__file__).resolve().parents[2] / "prompts")


@pytest.mark.parametrize(
    ("name", "items", "cap", "meta_key", "asked"),
    [
        (
            "blindspot-devils-advocate",
            "counter_arguments",
            MAX_COUNTER_ARGUMENTS,
            "max_counter_arguments",
            "between 3 and 5 counter-arguments",
        ),
        ("blindspot-premortem", "scenarios", MAX_SCENARIOS, None, "4 to 8 scenarios in total"),
        ("blindspot-adjacent-domain", "analogies", MAX_ANALOGIES, "max_analogies", "exactly 3 analogies"),
    ],
)
def test_the_prompt_its_schema_and_the_code_cap_agree(
    name: str, items: str, cap: int, meta_key: str | None, asked: str
) -> None:
    prompt = PROMPTS.prompt(name)
    assert prompt.schema["properties"][items]["maxItems"] == cap
    assert str(cap) in asked and asked in fold_whitespace(prompt.source)
    if meta_key is not None:
        assert prompt.meta.raw[meta_key] == cap


def test_the_premortem_code_caps_at_the_schemas_count() -> None:
    answer = PremortemAnswer.model_validate(pm_answer(categories=["technical"] * (MAX_SCENARIOS + 3)))
    assert len(answer.findings()) == MAX_SCENARIOS


def test_the_confidence_anchors_are_one_set_around_the_threshold() -> None:
    judge = PROMPTS.prompt("blindspot-judge")
    described = judge.schema["properties"]["findings"]["items"]["properties"]["confidence"]["description"]
    text = fold_whitespace(judge.source)
    for value, meaning in CONFIDENCE_ANCHORS:
        assert f"{value} {meaning}" in text
        assert f"{value} {meaning}" in described
    threshold = BlindSpotConfig().min_confidence
    values = [v for v, _ in CONFIDENCE_ANCHORS]
    assert min(values) < threshold < max(values) and threshold not in values
    assert f"({threshold:g} by default)" in text and f"({threshold:g} by default)" in described
    assert (
        "confidence" not in judge.schema["properties"]["findings"]["items"]["required"]
    )  # unscored, not dropped
