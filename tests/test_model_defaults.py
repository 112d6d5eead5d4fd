"""The default models live in two places a reader looks (app/adr_review/config.py DEFAULT_MODELS, and each prompt's
meta.yaml, which the golden gate and the run keys read): they must agree."""

from __future__ import annotations

from adr_review.config import DEFAULT_MODELS
from adr_review.pipeline.adr.blindspot import CRITIC_PROMPTS, JUDGE_PROMPT
from adr_review.pipeline.adr.recall import PROMPT_NAME
from adr_review.prompts import packaged


def test_each_prompts_meta_model_is_the_configured_default() -> None:
    prompts = packaged()
    assert prompts.prompt(PROMPT_NAME).meta.model == DEFAULT_MODELS["recall"]
    assert {prompts.prompt(p).meta.model for p in CRITIC_PROMPTS.values()} == {DEFAULT_MODELS["critic"]}
    assert prompts.prompt(JUDGE_PROMPT).meta.model == DEFAULT_MODELS["judge"]
