"""The layer contract of DESIGN.md, checked on the source: the core stays pure, the pipeline sees ports
only (no adapter, SDK or entrypoint import anywhere in it, not even inside a function), and importing
either pulls in no heavy SDK."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app" / "adr_review"

SDKS = ("anthropic", "chromadb", "github", "jwt", "httpx", "requests", "onnxruntime")
# The core: no SDK, no network, no database, no process environment, no other layer.
CORE_FORBIDDEN = (
    *SDKS,
    "sqlite3",
    "socket",
    "http",
    "urllib.request",
    "subprocess",
    "os",
    "adr_review.adapters",
    "adr_review.entrypoints",
    "adr_review.pipeline",
    "adr_review.config",  # pydantic-settings reads the environment
    "adr_review.prompts",  # reads prompt files
)
# File and environment access by name, wherever it appears in a core module.
CORE_FORBIDDEN_CALLS = frozenset(
    {"open", "read_text", "read_bytes", "write_text", "write_bytes", "getenv", "FileSystemLoader"}
)
CORE_FORBIDDEN_ATTRS = frozenset({"environ"})
# The one deliberate exception: the renderer loads its own Jinja templates and i18n strings
# (templates/, shipped with the code like a module) through one loader on first use; DESIGN.md puts
# "Review -> Markdown via templates/" in the core.
CORE_ALLOWED = {("render.py", "calls FileSystemLoader()")}
# The pipeline sees ports only: composition happens in the entrypoints.
PIPELINE_FORBIDDEN = (*SDKS, "sqlite3", "psycopg", "adr_review.adapters", "adr_review.entrypoints")
HEAVY = ("chromadb", "anthropic", "github", "onnxruntime")


def _matches(module: str, forbidden: tuple[str, ...]) -> str | None:
    return next((f for f in forbidden if module == f or module.startswith(f + ".")), None)


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:  # relative import: the package's own modules
        return []
    base = node.module or ""
    # `from adr_review import adapters` imports adr_review.adapters
    return [base] + [f"{base}.{a.name}" for a in node.names]


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
    """Every forbidden import, at any depth: inside functions and TYPE_CHECKING blocks too."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for module in _imported(node):
                if _matches(module, PIPELINE_FORBIDDEN):
                    out.append(f"line {node.lineno}: imports {module}")
    return out


def _modules(folder: str) -> list[Path]:
    """Every module of a layer, those of its packages included (core/adr/ is a package)."""
    return sorted((APP / folder).rglob("*.py"))


def _dotted(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", _modules("core"), ids=lambda p: p.relative_to(APP / "core").as_posix())
def test_core_module_is_pure(path: Path) -> None:
    found = core_violations(path.read_text(encoding="utf-8"))
    assert [
        v
        for v in found
        if (path.relative_to(APP / "core").as_posix(), v.split(": ", 1)[1]) not in CORE_ALLOWED
    ] == []


@pytest.mark.parametrize(
    "path", _modules("pipeline"), ids=lambda p: p.relative_to(APP / "pipeline").as_posix()
)
def test_pipeline_module_sees_ports_only(path: Path) -> None:
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
        "from github import Github",
        "import jwt",
        "import os",
        "from adr_review.adapters.index import ChromaAdrIndex",
        "from adr_review import adapters",
        "from adr_review.entrypoints import action",
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
        "from adr_review.core.text import tokenize",
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
        ("from adr_review.adapters.index import ChromaAdrIndex", True),
        ("import anthropic", True),
        ("try:\n    import chromadb\nexcept ImportError:\n    pass", True),
        ("class C:\n    import sqlite3", True),
        ("def f():\n    from adr_review.adapters import adr_files", True),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from adr_review.adapters.index import X",
            True,
        ),
        ("def f():\n    from adr_review.entrypoints.action import run_action", True),
        ("from adr_review.core.adr import Adr\nfrom adr_review.pipeline.ports import LlmPort", False),
    ],
)
def test_pipeline_check(source: str, flagged: bool) -> None:
    assert bool(pipeline_violations(source)) is flagged


@pytest.mark.real_process
def test_importing_the_core_and_the_review_pipeline_stays_light() -> None:
    modules = ["adr_review.pipeline.adr.review"] + [_dotted(p) for p in _modules("core")]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "HEAVY="


# One GitHub client stack (issue 11): PyGithub, and the JWT library it signs with, are imported under
# app/adr_review/adapters/github/ only; no second GitHub client (githubkit, hand-written JWT code) comes back.
GITHUB_CLIENTS = ("github", "githubkit", "jwt")


def test_one_github_client_stack() -> None:
    stack = APP / "adapters" / "github"
    found = []
    for path in sorted(APP.rglob("*.py")):
        if stack in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found += [
                    f"{path.relative_to(APP)}:{node.lineno} imports {m}"
                    for m in _imported(node)
                    if _matches(m, GITHUB_CLIENTS)
                ]
    assert found == []
    assert (stack / "__init__.py").is_file()  # the check above is not vacuous


# No import circle anywhere in app/adr_review/ (issue 25: action_env.py <-> workflow_commands.py was one), counting
# imports inside functions too: a circle hidden in a function is still two modules that need each other.


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the modules of `sources` it imports (`from a import b` imports a, or a.b if a module)."""
    graph: dict[str, set[str]] = {name: set() for name in sources}
    for name, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name] |= {m for m in _imported(node) if m in sources and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: each strongly connected group of two or more modules (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_circle_in_app() -> None:
    sources = {_dotted(p): p.read_text(encoding="utf-8") for p in sorted(APP.rglob("*.py"))}
    assert len(sources) > 100
    assert circles(import_graph(sources)) == []


@pytest.mark.parametrize(
    ("sources", "found"),
    [
        ({"a": "import b", "b": "def f():\n    from a import x"}, [["a", "b"]]),  # inside a function
        ({"a": "from b import c", "b": "", "b.c": "import a"}, [["a", "b.c"]]),
        ({"a": "import b", "b": "import c", "c": ""}, []),
    ],
)
def test_the_circle_check_finds_them(sources: dict[str, str], found: list[list[str]]) -> None:
    assert circles(import_graph(sources)) == found
