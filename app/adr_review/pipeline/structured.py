"""One structured LLM step: render a prompt, call the port, parse tolerantly, validate against its schema."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from adr_review.config import LlmSettings
from adr_review.core.llm_json import (
    NotJsonError,
    clip_to_schema,
    drop_invalid_items,
    parse_json_answer,
    schema_errors,
)
from adr_review.core.results import Usage
from adr_review.pipeline.ports import LlmError, LlmPort, LlmRequest
from adr_review.prompts import Prompt

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
    usage: Usage  # every call it took (a cut-off answer's retry included)
    request: LlmRequest
    clipped: int = 0  # values clipped to the schema's limits
    dropped_items: int = 0  # malformed list items left out


def build_request(
    prompt: Prompt,
    variables: Mapping[str, Any],
    overrides: StepOverrides | None = None,
    *,
    shared_prefix: str | None = None,
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
        shared_prefix=shared_prefix,
    )


def request_key(request: LlmRequest) -> str:
    """The hash of everything a model call reads (prompt text with the ADR, candidates or findings in
    it, schema, model, parameters): the content address of its answer (StageMemo `key`)."""
    material = {
        "prompt": request.prompt_name,
        "system": request.system,
        "cacheable": request.cacheable_prefix,
        "user": request.user,
        "schema": request.output_schema,
        "model": request.model,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    if request.shared_prefix is not None:
        material["shared"] = request.shared_prefix
    text = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


MAX_TOKENS_CEILING = 16_000  # the one retry of a cut-off answer doubles max_tokens up to this


def call_prompt(
    llm: LlmPort,
    prompt: Prompt,
    variables: Mapping[str, Any],
    overrides: StepOverrides | None = None,
    validate: Callable[[Any], list[str]] | None = None,
    *,
    request: LlmRequest | None = None,
    item_valid: Callable[[Any], bool] | None = None,
) -> StructuredAnswer:
    """One structured step, degrading item by item instead of failing whole:

    - an answer cut off at `max_tokens` (stop_reason) is asked once more with twice the budget, then
      fails as `truncated` (never parsed: its first inner object is not the answer);
    - strings and lists over the schema's limits are clipped (`clip_to_schema`);
    - an item of a top-level list that does not validate is dropped, the rest kept (`item_valid`, else
      the item's schema, decides);
    - `validate` replaces the strict output_schema check of the rest (returns problems, [] when
      acceptable): for steps whose code repairs some violations itself (recall maps an unknown
      relevance to low). `request`: the already built request (the caller keyed its memo on it).
    """
    request = request or build_request(prompt, variables, overrides)
    log.info(
        "prompt_loaded", extra={"prompt": prompt.name, "model": request.model, "source": str(prompt.folder)}
    )
    paid = Usage()
    response = None
    for attempt in range(2):
        try:
            response = llm.complete(request)
        except LlmError as exc:
            raise StepFailed("llm_error", str(exc), paid + exc.usage) from exc
        paid = paid + response.usage
        if response.stop_reason != "max_tokens":
            break
        if attempt == 0 and request.max_tokens < MAX_TOKENS_CEILING:
            bigger = min(request.max_tokens * 2, MAX_TOKENS_CEILING)
            log.warning("answer_truncated_retrying", extra={"prompt": prompt.name, "max_tokens": bigger})
            request = dataclasses.replace(request, max_tokens=bigger)
            continue
        raise StepFailed(
            "truncated",
            f"the answer was cut off at max_tokens={request.max_tokens} (raise llm.prompts.{prompt.name}.max_tokens)",
            paid,
            response.text,
        )
    assert response is not None
    data = response.data
    if data is None:
        try:
            data = parse_json_answer(response.text)
        except NotJsonError as exc:
            raise StepFailed("not_json", str(exc), paid, response.text) from exc
    data, clipped = clip_to_schema(data, prompt.schema, lists=validate is None)
    data, dropped = drop_invalid_items(data, prompt.schema, item_valid)
    if clipped or dropped:
        log.warning(
            "answer_repaired", extra={"prompt": prompt.name, "clipped": clipped, "dropped_items": dropped}
        )
    problems = validate(data) if validate is not None else schema_errors(data, prompt.schema)
    if problems:
        raise StepFailed("schema", "; ".join(problems), paid, response.text)
    return StructuredAnswer(
        data=data, raw_text=response.text, usage=paid, request=request, clipped=clipped, dropped_items=dropped
    )
