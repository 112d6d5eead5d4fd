"""Each answer's shape is defined once: output_schema.json is generated from the pydantic answer model."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from adr_review.evals import schemas
from adr_review.evals.golden.runner import discover_prompts
from adr_review.pipeline.adr.blindspot_answers import JudgeAnswer, PremortemAnswer
from adr_review.pipeline.answer_schema import output_schema
from adr_review.prompts import PROMPTS_DIR, load_prompt


def test_the_committed_schemas_are_what_the_models_generate() -> None:
    differ = [p.relative_to(PROMPTS_DIR).as_posix() for p in schemas.stale()]
    assert not differ, f"regenerate with: python -m adr_review.evals.schemas --write ({differ})"


def test_every_prompt_has_an_answer_model() -> None:
    assert set(schemas.ANSWER_MODELS) == set(discover_prompts(PROMPTS_DIR))


@pytest.mark.parametrize("name", sorted(schemas.ANSWER_MODELS))
def test_the_generated_schema_is_the_dialect_the_request_carries(name: str) -> None:
    schema = output_schema(schemas.ANSWER_MODELS[name])
    jsonschema.Draft202012Validator.check_schema(schema)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and '"default"' not in text
    assert load_prompt(name).schema == schema  # what build_request puts in LlmRequest.output_schema


def test_defaults_are_fallbacks_not_permission_to_leave_a_field_out() -> None:
    scenario = output_schema(PremortemAnswer)["properties"]["scenarios"]["items"]
    assert "severity_score" in scenario["required"]  # defaulted in code, still asked for
    assert "actionability" not in scenario["required"]  # marked OPTIONAL
    assert "risk_priority" in scenario["properties"]  # the alias: what the model is asked to send
    judge = output_schema(JudgeAnswer)
    assert judge["required"] == ["findings", "total_count_by_severity", "self_assessment"]


def test_a_model_change_is_caught_and_write_regenerates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in schemas.ANSWER_MODELS:
        (tmp_path / name).mkdir()
        (tmp_path / name / schemas.SCHEMA_FILE).write_text("{}\n", encoding="utf-8")
    assert schemas.main(["--prompts-dir", str(tmp_path)]) == 1
    assert "differs from its answer model" in capsys.readouterr().err
    assert schemas.main(["--prompts-dir", str(tmp_path), "--write"]) == 0
    assert schemas.main(["--prompts-dir", str(tmp_path)]) == 0
    for name in schemas.ANSWER_MODELS:
        committed = (PROMPTS_DIR / name / schemas.SCHEMA_FILE).read_text(encoding="utf-8")
        assert (tmp_path / name / schemas.SCHEMA_FILE).read_text(encoding="utf-8") == committed
