"""Prompt folders: prompts/<name>/{prompt.md, output_schema.json, meta.yaml}, and the PromptLibrary
over them (app/adr_review/pipeline/ports.py): every prompt and the constitution loaded once, the files hashed
once, so a review reads no prompt file after the first use.

prompt.md is a Jinja template in up to three parts, each opened by a marker line:
`<!-- system -->`, optionally `<!-- cacheable -->` (a long stable block sent with cache_control),
and `<!-- user -->`. ADR text is passed in as variables, never concatenated into the template source.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adr_review.core.perspectives import ConstitutionError, Perspective, parse_constitution
from adr_review.core.shipped import shipped_dir

PROMPTS_DIR = shipped_dir("prompts")  # package data of the install, or the checkout's prompts/
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
        import jinja2  # here, not at the top: an offline recall loads prompts but renders none

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

    digest: str = ""  # hash of the prompt's three files, taken when they were read

    def files_hash(self) -> str:
        """Hash of the prompt's files: part of a request's record, so a prompt change is visible."""
        return self.digest


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
    import yaml  # a prompt's meta, read when a stage asks for the prompt

    folder = (prompts_dir or PROMPTS_DIR) / name
    try:
        source = (folder / "prompt.md").read_text(encoding="utf-8")
        schema = json.loads((folder / "output_schema.json").read_text(encoding="utf-8"))
        meta_raw = yaml.safe_load((folder / "meta.yaml").read_text(encoding="utf-8")) or {}
        h = hashlib.sha256()
        for fname in ("prompt.md", "output_schema.json", "meta.yaml"):
            h.update(fname.encode())
            h.update((folder / fname).read_bytes())
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
    return Prompt(
        name=name, source=source, schema=schema, meta=meta, folder=folder, digest=h.hexdigest()[:16]
    )


CONSTITUTION_FILE = "constitution.yaml"


# The golden eval's cases (<prompt>/golden/) and ADR library (_golden/): never a stage's input, and
# not shipped in the wheel, so an installed copy and a checkout of the same prompts hash alike.
GOLDEN_ONLY = frozenset({"golden", "_golden"})


def prompts_hash(root: Path) -> str:
    """Hash of every prompt file that can change a stage's result (golden cases excluded)."""
    h = hashlib.sha256()
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            # Parts below root only: an install under a dot folder (~/.local/pipx/...) hashes its files too.
            parts = p.relative_to(root).parts
            if not p.is_file() or any(part in GOLDEN_ONLY or part.startswith(".") for part in parts):
                continue
            h.update(rel.encode())
            h.update(b"\0")
            h.update(p.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]


class PromptFiles:
    """The PromptLibrary of one prompts folder. A load that fails is not cached (it raises again)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or PROMPTS_DIR
        self._lock = threading.Lock()
        self._prompts: dict[str, Prompt] = {}
        self._constitution: tuple[Perspective, ...] | None = None
        self._hash: str | None = None

    @property
    def hash(self) -> str:
        with self._lock:
            if self._hash is None:
                self._hash = prompts_hash(self.root)
            return self._hash

    def prompt(self, name: str) -> Prompt:
        with self._lock:
            if name not in self._prompts:
                self._prompts[name] = load_prompt(name, self.root)
            return self._prompts[name]

    def constitution(self) -> tuple[Perspective, ...]:
        with self._lock:
            if self._constitution is None:
                import yaml

                path = self.root / CONSTITUTION_FILE
                try:
                    data = yaml.safe_load(path.read_text(encoding="utf-8"))
                except (OSError, yaml.YAMLError) as exc:
                    raise ConstitutionError(f"{path}: {exc}") from exc
                self._constitution = parse_constitution(data)
            return self._constitution


_PACKAGED: PromptFiles | None = None


def packaged() -> PromptFiles:
    """The prompts shipped with the program, loaded once per process."""
    global _PACKAGED
    if _PACKAGED is None:
        _PACKAGED = PromptFiles(PROMPTS_DIR)
    return _PACKAGED
