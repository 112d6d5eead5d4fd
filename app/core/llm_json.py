"""Tolerant parsing of model answers and JSON-schema validation. Pure.

Models wrap JSON in code fences or lead with prose even when told not to; we recover the first
complete JSON object instead of failing the stage, then validate it strictly against the schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import jsonschema

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


class NotJsonError(ValueError):
    pass


def parse_json_answer(text: str) -> Any:
    """The first JSON object in text: whole text, else a fenced block, else the first balanced {...}."""
    stripped = text.strip()
    if not stripped:
        raise NotJsonError("empty answer")
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block)
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", text):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise NotJsonError(f"no JSON object in answer: {stripped[:120]!r}")


def schema_errors(data: Any, schema: Mapping[str, Any], limit: int = 5) -> list[str]:
    """Human-readable schema violations ("citations.0.relevance_reason: 'x' is too long"), [] when valid."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    out = []
    for err in errors[:limit]:
        where = ".".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{where}: {err.message}")
    return out
