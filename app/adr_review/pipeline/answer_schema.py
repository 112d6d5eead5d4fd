"""The JSON schema a model is given for its answer, generated from the pydantic answer model.

Each answer's shape is defined once, by its model (app/adr_review/pipeline/adr/blindspot_answers.py,
app/adr_review/pipeline/adr/recall_answer.py). `prompts/<name>/output_schema.json` is this function's output,
committed because the prompt hash and the golden keys read the file; `python -m adr_review.evals.schemas
--write` regenerates it and tests/evals/test_output_schemas.py fails when the two differ.

The dialect is the one the files always used: draft 2020-12 with everything inline (no `$defs`/`$ref`),
no pydantic titles or defaults (the model is asked for values, it is not told the code's fallbacks), and
every field in `required` unless marked with OPTIONAL: a default is what the code falls back to when an
answer leaves a field out anyway, not permission to leave it out.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonDict

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_OPTIONAL_KEY = "x-optional"
OPTIONAL: JsonDict = {_OPTIONAL_KEY: True}  # a field's json_schema_extra: the model may omit it
_ORDER = ("$schema", "title", "description", "type", "additionalProperties", "required", "properties")


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The answer schema of `model` in the output_schema.json dialect (see the module docstring)."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    body = _clean(raw, defs, root=True)
    return _ordered({"$schema": DIALECT, **body})


def _clean(node: Any, defs: dict[str, Any], root: bool = False) -> Any:
    if isinstance(node, list):
        return [_clean(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:  # "#/$defs/Name": inline it (the models are not recursive)
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        return _clean({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "default" or (key == "title" and not root) or key == _OPTIONAL_KEY:
            continue
        if key == "properties":
            out[key] = {name: _clean(sub, defs) for name, sub in value.items()}
            required = [name for name, sub in value.items() if not sub.get(_OPTIONAL_KEY)]
            if required:
                out["required"] = required
        elif key != "required":
            out[key] = _clean(value, defs)
    return _ordered(out)


def _ordered(node: dict[str, Any]) -> dict[str, Any]:
    """The keys a reader looks for first, in the files' order; the rest as pydantic emitted them."""
    head = {k: node[k] for k in _ORDER if k in node}
    return {**head, **{k: v for k, v in node.items() if k not in head}}
