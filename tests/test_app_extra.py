"""The App's dependencies are an extra (`pip install '.[app]'`: starlette, uvicorn): the CLI and the
Action run without them, and `adr-review serve` says what to install. Child interpreters in which
those packages cannot be imported, as after a default install."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_process

ROOT = Path(__file__).resolve().parents[1]
APP_ONLY = ("starlette", "uvicorn")
WITHOUT_APP = (
    "import sys\n"
    f"for name in {APP_ONLY!r}:\n"
    "    sys.modules[name] = None  # importing it raises ImportError, as when it is not installed\n"
    "from adr_review.cli import main\n"
    "code = main(sys.argv[1:])\n"
    f"print('IMPORTED=' + ','.join(m for m in {APP_ONLY!r} if sys.modules.get(m) is not None))\n"
    "sys.exit(code)\n"
)


def without_app(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_APP, *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_app_only_packages_are_the_app_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    default = " ".join(project["dependencies"])
    assert not any(name in default for name in APP_ONLY)
    assert all(any(r.startswith(name) for r in project["optional-dependencies"]["app"]) for name in APP_ONLY)


def test_the_readme_review_runs_without_the_app_extra(tmp_path: Path) -> None:
    proposal = ROOT / "examples" / "proposals" / "0008-adopt-kafka-for-order-events.md"
    run = without_app(["review", str(proposal), "--adr-dir", str(ROOT / "examples" / "adr")], tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("<!-- adr-review:v1 ") and "IMPORTED=\n" in run.stdout


def test_the_action_entrypoint_runs_without_the_app_extra(tmp_path: Path) -> None:
    run = without_app(["action"], tmp_path)  # outside GitHub Actions: a clean ::error, not an ImportError
    assert run.returncode != 0
    assert "::error" in run.stdout + run.stderr
    assert "ImportError" not in run.stderr and "ModuleNotFoundError" not in run.stderr


def test_serve_names_the_extra_it_needs(tmp_path: Path) -> None:
    run = without_app(["serve"], tmp_path)
    assert run.returncode == 2
    assert "adr-review serve: starlette is not installed: pip install 'adr-review[app]'" in run.stderr
