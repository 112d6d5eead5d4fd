"""The layer contract of DESIGN.md, checked on the source: the core stays pure, the pipeline reaches
the adapters only lazily, and importing either pulls in no heavy SDK."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"

SDKS = ("anthropic", "chromadb", "github", "githubkit", "httpx", "requests", "onnxruntime")
# The core: no SDK, no network, no database, no process environment, no other layer.
CORE_FORBIDDEN = (
    *SDKS,
    "sqlite3",
    "socket",
    "http",
    "urllib.request",
    "subprocess",
    "os",
    "app.adapters",
    "app.entrypoints",
    "app.pipeline",
    "app.config",  # pydantic-settings reads the environment
    "app.prompts",  # reads prompt files
)
# File and environment access by name, wherever it appears in a core module.
CORE_FORBIDDEN_CALLS = frozenset(
    {"open", "read_text", "read_bytes", "write_text", "write_bytes", "getenv", "FileSystemLoader"}
)
CORE_FORBIDDEN_ATTRS = frozenset({"environ"})
# The one deliberate exception: the renderer loads its own Jinja templates (templates/, shipped with
# the code like a module) on first use; DESIGN.md puts "Review -> Markdown via templates/" in the core.
CORE_ALLOWED = {("render.py", "calls FileSystemLoader()")}
# The pipeline may import the adapters inside a function (composition, kept lazy), not at module level.
PIPELINE_FORBIDDEN_TOP = (*SDKS, "sqlite3", "app.adapters", "app.entrypoints")
HEAVY = ("chromadb", "anthropic", "github", "githubkit", "onnxruntime")


def _matches(module: str, forbidden: tuple[str, ...]) -> str | None:
    return next((f for f in forbidden if module == f or module.startswith(f + ".")), None)


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:  # relative import: the package's own modules
        return []
    base = node.module or ""
    # `from app import adapters` imports app.adapters
    return [base] + [f"{base}.{a.name}" for a in node.names]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def core_violations(source: str) -> list[str]:
    """Every forbidden import (at any depth), file or environment access in a core module."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for module in _imported(node):
                if _matches(module, CORE_FORBIDDEN):
                    out.append(f"line {node.lineno}: imports {module}")
        elif isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name in CORE_FORBIDDEN_CALLS:
                out.append(f"line {node.lineno}: calls {name}()")
        elif isinstance(node, ast.Attribute) and node.attr in CORE_FORBIDDEN_ATTRS:
            out.append(f"line {node.lineno}: uses .{node.attr}")
    return out


def pipeline_violations(source: str) -> list[str]:
    """Forbidden imports executed when the module is imported (outside functions and TYPE_CHECKING)."""
    out: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for module in _imported(node):
                    if _matches(module, PIPELINE_FORBIDDEN_TOP):
                        out.append(f"line {node.lineno}: imports {module} at module level")
            elif isinstance(node, ast.If) and _is_type_checking(node):
                visit(node.orelse)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(node, block, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)  # a class body runs at import time

    visit(ast.parse(source).body)
    return out


def _modules(folder: str) -> list[Path]:
    return sorted((APP / folder).glob("*.py"))


@pytest.mark.parametrize("path", _modules("core"), ids=lambda p: p.name)
def test_core_module_is_pure(path: Path) -> None:
    found = core_violations(path.read_text(encoding="utf-8"))
    assert [v for v in found if (path.name, v.split(": ", 1)[1]) not in CORE_ALLOWED] == []


@pytest.mark.parametrize("path", _modules("pipeline"), ids=lambda p: p.name)
def test_pipeline_module_reaches_adapters_only_lazily(path: Path) -> None:
    assert pipeline_violations(path.read_text(encoding="utf-8")) == []


def test_every_layer_has_modules() -> None:
    # An empty glob (a moved folder) would make the checks above vacuous.
    assert len(_modules("core")) >= 10 and len(_modules("pipeline")) >= 5


@pytest.mark.parametrize(
    "source",
    [
        "import sqlite3",
        "import chromadb.api",
        "from anthropic import Anthropic",
        "from githubkit import GitHub",
        "import os",
        "from app.adapters.index import ChromaAdrIndex",
        "from app import adapters",
        "from app.entrypoints import action",
        "def f():\n    import httpx",
        "from pathlib import Path\nx = Path('a').read_text()",
        "text = open('f').read()",
        "from os import environ",
        "import os as o\nkey = o.environ['K']",
        "env = jinja2.Environment(loader=jinja2.FileSystemLoader('t'))",
    ],
)
def test_core_check_catches(source: str) -> None:
    assert core_violations(source)


@pytest.mark.parametrize(
    "source",
    [
        "import re\nimport hashlib\nfrom collections.abc import Mapping",
        "from app.core.text import tokenize",
        "import yaml\nimport jinja2",
        "from . import text",
        "import githubish",  # a prefix is not a match
    ],
)
def test_core_check_allows(source: str) -> None:
    assert core_violations(source) == []


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("from app.adapters.index import ChromaAdrIndex", True),
        ("import anthropic", True),
        ("try:\n    import chromadb\nexcept ImportError:\n    pass", True),
        ("class C:\n    import sqlite3", True),
        ("def f():\n    from app.adapters import adr_files", False),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app.adapters.index import X", False),
        ("from app.core.adr import Adr\nfrom app.pipeline.ports import LlmPort", False),
    ],
)
def test_pipeline_check(source: str, flagged: bool) -> None:
    assert bool(pipeline_violations(source)) is flagged


def test_importing_the_core_and_the_review_pipeline_stays_light() -> None:
    modules = ["app.pipeline.review"] + [
        f"app.core.{p.stem}" for p in _modules("core") if p.stem != "__init__"
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "HEAVY="
