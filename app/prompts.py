"""Prompt folders: prompts/<name>/{prompt.md, output_schema.json, meta.yaml}.

prompt.md is a Jinja template in up to three parts, each opened by a marker line:
`<!-- system -->`, optionally `<!-- cacheable -->` (a long stable block sent with cache_control),
and `<!-- user -->`. ADR text is passed in as variables, never concatenated into the template source.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
_MARKERS = {"<!-- system -->": "system", "<!-- cacheable -->": "cacheable", "<!-- user -->": "user"}


class PromptError(ValueError):
    pass


@dataclass(frozen=True)
class PromptMeta:
    model: str
    temperature: float | None
    max_tokens: int
    thresholds: Mapping[str, float]
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class RenderedPrompt:
    name: str
    system: str
    cacheable: str | None
    user: str


@dataclass(frozen=True)
class Prompt:
    name: str
    source: str
    schema: Mapping[str, Any]
    meta: PromptMeta
    folder: Path

    def render(self, **variables: Any) -> RenderedPrompt:
        env = jinja2.Environment(
            undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True
        )
        parts = _split_parts(self.source, self.name)
        rendered = {k: env.from_string(v).render(**variables).strip() for k, v in parts.items()}
        return RenderedPrompt(
            name=self.name,
            system=rendered.get("system", ""),
            cacheable=rendered.get("cacheable") or None,
            user=rendered["user"],
        )

    def files_hash(self) -> str:
        """Hash of the prompt's files: part of a run key, so a prompt change invalidates checkpoints."""
        h = hashlib.sha256()
        for fname in ("prompt.md", "output_schema.json", "meta.yaml"):
            p = self.folder / fname
            h.update(fname.encode())
            h.update(p.read_bytes() if p.exists() else b"")
        return h.hexdigest()[:16]


def _split_parts(source: str, name: str) -> dict[str, str]:
    parts: dict[str, list[str]] = {}
    current: str | None = None
    for line in source.splitlines(keepends=True):
        marker = _MARKERS.get(line.strip())
        if marker:
            current = marker
            parts[current] = []
        elif current is not None:
            parts[current].append(line)
    if "user" not in parts:
        raise PromptError(f"prompt {name!r}: prompt.md has no '<!-- user -->' part")
    return {k: "".join(v) for k, v in parts.items()}


def load_prompt(name: str, prompts_dir: Path | None = None) -> Prompt:
    folder = (prompts_dir or PROMPTS_DIR) / name
    try:
        source = (folder / "prompt.md").read_text(encoding="utf-8")
        schema = json.loads((folder / "output_schema.json").read_text(encoding="utf-8"))
        meta_raw = yaml.safe_load((folder / "meta.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise PromptError(f"prompt {name!r} in {folder}: {exc}") from exc
    _split_parts(source, name)
    try:
        meta = PromptMeta(
            model=str(meta_raw["model"]),
            temperature=None if meta_raw.get("temperature") is None else float(meta_raw["temperature"]),
            max_tokens=int(meta_raw.get("max_tokens", 2048)),
            thresholds={str(k): float(v) for k, v in (meta_raw.get("thresholds") or {}).items()},
            raw=meta_raw,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise PromptError(f"prompt {name!r}: bad meta.yaml: {exc}") from exc
    return Prompt(name=name, source=source, schema=schema, meta=meta, folder=folder)
