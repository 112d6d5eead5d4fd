"""One structured LLM step: render a prompt, call the port, parse tolerantly, validate against its schema."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.config import LlmSettings
from app.core.llm_json import NotJsonError, parse_json_answer, schema_errors
from app.core.results import Usage
from app.pipeline.ports import LlmError, LlmPort, LlmRequest
from app.prompts import Prompt

log = logging.getLogger(__name__)


class StepFailed(Exception):
    """A step gave no valid answer. kind: llm_error | not_json | schema. usage: what was still paid for."""

    def __init__(self, kind: str, message: str, usage: Usage, raw_text: str = "") -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.usage = usage
        self.raw_text = raw_text


@dataclass(frozen=True)
class StepOverrides:
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None

    @classmethod
    def from_config(cls, llm: LlmSettings, prompt_name: str) -> StepOverrides:
        """The repo config's `llm.prompts.<name>` values, which win over the prompt's meta.yaml."""
        o = llm.prompts.get(prompt_name)
        if o is None:
            return cls()
        return cls(model=o.model, temperature=o.temperature, max_tokens=o.max_tokens)


@dataclass(frozen=True)
class StructuredAnswer:
    data: Any
    raw_text: str
    usage: Usage
    request: LlmRequest


def build_request(
    prompt: Prompt, variables: Mapping[str, Any], overrides: StepOverrides | None = None
) -> LlmRequest:
    o = overrides or StepOverrides()
    rendered = prompt.render(**variables)
    return LlmRequest(
        prompt_name=prompt.name,
        system=rendered.system,
        user=rendered.user,
        cacheable_prefix=rendered.cacheable,
        output_schema=prompt.schema,
        model=o.model or prompt.meta.model,
        temperature=o.temperature if o.temperature is not None else prompt.meta.temperature,
        max_tokens=o.max_tokens or prompt.meta.max_tokens,
    )


def call_prompt(
    llm: LlmPort,
    prompt: Prompt,
    variables: Mapping[str, Any],
    overrides: StepOverrides | None = None,
    validate: Callable[[Any], list[str]] | None = None,
) -> StructuredAnswer:
    """`validate` replaces the strict output_schema check (returns problems, [] when acceptable): for steps
    whose code repairs some violations itself, e.g. recall maps an unknown relevance to low."""
    request = build_request(prompt, variables, overrides)
    log.info(
        "prompt_loaded", extra={"prompt": prompt.name, "model": request.model, "source": str(prompt.folder)}
    )
    try:
        response = llm.complete(request)
    except LlmError as exc:
        raise StepFailed("llm_error", str(exc), exc.usage) from exc
    data = response.data
    if data is None:
        try:
            data = parse_json_answer(response.text)
        except NotJsonError as exc:
            raise StepFailed("not_json", str(exc), response.usage, response.text) from exc
    problems = validate(data) if validate is not None else schema_errors(data, prompt.schema)
    if problems:
        raise StepFailed("schema", "; ".join(problems), response.usage, response.text)
    return StructuredAnswer(data=data, raw_text=response.text, usage=response.usage, request=request)
