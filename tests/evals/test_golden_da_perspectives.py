"""Each hand-written Devil's Advocate answer argues through exactly the perspectives its case's seed draws
(the relevance-weighted draw, rendered into the request): a change to the draw or the constitution that
moves a case off its answer's perspectives fails here, not silently in the eval."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from adr_review.evals.golden.cases import GoldenCase, golden_dir, load_cases, load_recording
from adr_review.evals.golden.suite_blindspot import BlindSpotSuite
from adr_review.prompts import load_prompt

PROMPTS = Path(__file__).resolve().parents[2] / "prompts"
NAME = "blindspot-devils-advocate"
PROMPT = load_prompt(NAME, PROMPTS)
CASES, _ERRORS = load_cases(golden_dir(PROMPT))


def test_the_cases_load() -> None:
    assert CASES and not _ERRORS


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_answer_uses_the_drawn_perspectives(case: GoldenCase) -> None:
    request = BlindSpotSuite(NAME).request(case, PROMPT)
    drawn = set(re.findall(r"^\s*- `([a-z_]+)` — ", request.system, re.MULTILINE))
    assert len(drawn) == 3
    recording = load_recording(golden_dir(PROMPT), case.id)
    assert recording is not None
    data = recording.data if recording.data is not None else json.loads(recording.text)
    used = {c["perspective"] for c in data["counter_arguments"]}
    assert used == drawn, case.id
