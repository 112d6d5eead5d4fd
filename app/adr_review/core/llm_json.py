"""Tolerant parsing of model answers and JSON-schema validation. Pure.

Models wrap JSON in code fences or lead with prose even when told not to; we recover the first
complete JSON object instead of failing the stage, then validate it strictly against the schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

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
    end = len(text.rstrip())
    for match in re.finditer(r"[{\[]", text):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError as exc:
            if exc.pos >= end - 1:
                # The text ends inside this value: a cut-off answer. Its inner objects are fragments,
                # never the answer (reading the first one as the answer was a real bug).
                raise NotJsonError(
                    f"the answer ends inside its JSON (truncated?): ...{stripped[-80:]!r}"
                ) from None
            continue
        if isinstance(value, dict):
            return value
    raise NotJsonError(f"no JSON object in answer: {stripped[:120]!r}")


def schema_errors(data: Any, schema: Mapping[str, Any], limit: int = 5) -> list[str]:
    """Human-readable schema violations ("citations.0.relevance_reason: 'x' is too long"), [] when valid."""
    import jsonschema  # here, not at the top: an offline recall never validates, and the import is 0.15 s

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    out = []
    for err in errors[:limit]:
        where = ".".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{where}: {err.message}")
    return out


def clip_to_schema(data: Any, schema: Mapping[str, Any], *, lists: bool = True) -> tuple[Any, int]:
    """Strings over `maxLength` clipped (ending in "…") and, with `lists`, arrays over `maxItems` cut,
    as the schema allows: an over-long field costs its tail, not the whole answer. Returns (data,
    values clipped). A step whose code applies its own cap after verifying (recall) keeps its lists."""
    clipped = 0

    def walk(value: Any, sch: Mapping[str, Any]) -> Any:
        nonlocal clipped
        if isinstance(value, str):
            limit = sch.get("maxLength")
            if isinstance(limit, int) and len(value) > limit:
                clipped += 1
                return value[: max(0, limit - 1)] + "…" if limit > 0 else ""
            return value
        if isinstance(value, list):
            items = sch.get("items")
            out = [walk(v, items) if isinstance(items, Mapping) else v for v in value]
            limit = sch.get("maxItems") if lists else None
            if isinstance(limit, int) and len(out) > limit:
                clipped += 1
                out = out[:limit]
            return out
        if isinstance(value, dict):
            props = sch.get("properties")
            if not isinstance(props, Mapping):
                return value
            return {
                k: walk(v, props[k]) if isinstance(props.get(k), Mapping) else v for k, v in value.items()
            }
        return value

    return walk(data, schema), clipped


def drop_invalid_items(
    data: Any, schema: Mapping[str, Any], item_valid: Callable[[Any], bool] | None = None
) -> tuple[Any, int]:
    """Items of the answer's top-level arrays of objects that do not match their item schema are
    dropped, one by one: one malformed citation or finding costs that item, not the whole answer."""
    if not isinstance(data, dict):
        return data, 0
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return data, 0
    dropped = 0
    out = dict(data)
    for key, sch in props.items():
        items = sch.get("items") if isinstance(sch, Mapping) else None
        value = data.get(key)
        if not (isinstance(value, list) and isinstance(items, Mapping) and items.get("type") == "object"):
            continue
        check = item_valid
        if check is None:
            import jsonschema

            check = jsonschema.Draft202012Validator(items).is_valid
        kept = [v for v in value if check(v)]
        dropped += len(value) - len(kept)
        out[key] = kept
    return out, dropped
