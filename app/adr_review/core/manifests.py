"""Dependency names a diff adds or removes, read from the changed lines of manifests. Pure.

A diff shows lines, not files, so each format is read line by line (the section a line sits in is
not known): a line that has the shape of a dependency entry of that manifest names one. Formats:

| file | an entry looks like |
|---|---|
| pyproject.toml, setup.cfg, setup.py, requirements*.txt | `"requests>=2"`, `requests = "^2"` (Poetry), `requests>=2` |
| package.json | `"left-pad": "^1.3.0"` (a version, range, tag or `npm:`/`file:`/`git` spec) |
| go.mod | `require github.com/x/y v1.2.3` or a `github.com/x/y v1.2.3` line of a require block |
| Gemfile, *.gemspec | `gem "rails"`, `add_dependency "rails"` |
| Cargo.toml | `serde = "1"`, `serde = { version = ... }` |
| Dockerfile, *.dockerfile, Containerfile | `FROM postgres:16 AS db` (the image, without tag or digest) |
| *.tf | `provider "aws"`, `source = "hashicorp/aws"` |

Lockfiles are not read (app/adr_review/core/guard.py ignores them): the manifest says what was chosen.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from adr_review.core.diff import DiffFile

Change = Literal["added", "removed"]


@dataclass(frozen=True)
class Dependency:
    name: str
    manifest: str  # the file's path
    change: Change
    line: str  # the diff line it was read from, verbatim


_PEP508 = re.compile(r"^\s*[\"']?([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:[<>=!~;@ ]|[\"'],?\s*$|$)")
_POETRY = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*=\s*(?:\"[^\"]*\"|'[^']*'|\{)")
_NPM = re.compile(
    r"^\s*\"((?:@[\w.-]+/)?[\w.-]+)\"\s*:\s*\"(?:[~^<>=*]|\d|latest|next|workspace:|npm:|file:|git|https?:|link:)"
)
_GO = re.compile(r"^\s*(?:require\s+)?([a-z0-9.-]+\.[a-z]{2,}/[^\s]+)\s+v\d")
_GEM = re.compile(r"^\s*(?:gem|\w+\.add_(?:runtime_|development_)?dependency)\s*\(?\s*[\"']([\w.-]+)[\"']")
_CARGO = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=\s*(?:\"[\d^~=<>*][^\"]*\"|\{)")
_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?([^\s:@]+)", re.IGNORECASE)
_TF_PROVIDER = re.compile(r"^\s*provider\s+\"([\w-]+)\"")
_TF_SOURCE = re.compile(r"^\s*source\s*=\s*\"(?:[\w.-]+/)?([\w.-]+)/([\w-]+)\"")

# Keys of these files that have a dependency entry's shape but are not dependencies.
_NOT_DEPS = frozenset(
    {
        "name",
        "version",
        "description",
        "edition",
        "license",
        "readme",
        "authors",
        "homepage",
        "repository",
        "documentation",
        "keywords",
        "python",
        "requires-python",
        "build-backend",
        "rust-version",
        "resolver",
        "workspace",
        "path",
        "features",
        "default",
        "git",
        "branch",
        "tag",
        "rev",
        "optional",
        "package",
        "include",
        "exclude",
        "packages",
        "main",
        "module",
        "types",
        "engines",
        "node",
        "npm",
    }
)


def _python(line: str) -> list[str]:
    m = _POETRY.match(line) or _PEP508.match(line)
    return [m.group(1)] if m else []


def _one(pattern: re.Pattern[str]) -> Callable[[str], list[str]]:
    def read(line: str) -> list[str]:
        m = pattern.match(line)
        return [m.group(1)] if m else []

    return read


def _go(line: str) -> list[str]:
    m = _GO.match(line)
    return [m.group(1), m.group(1).rstrip("/").split("/")[-1]] if m else []


def _docker(line: str) -> list[str]:
    m = _FROM.match(line)
    if not m or m.group(1).startswith("$") or m.group(1).lower() == "scratch":
        return []
    image = m.group(1)
    return [image, image.split("/")[-1]] if "/" in image else [image]


def _terraform(line: str) -> list[str]:
    m = _TF_PROVIDER.match(line)
    if m:
        return [m.group(1)]
    s = _TF_SOURCE.match(line)
    return [s.group(2)] if s else []


def reader_for(path: str) -> Callable[[str], list[str]] | None:
    """The line reader of the manifest format at `path`, None when it is not a manifest."""
    name = posixpath.basename(path).casefold()
    if name in ("pyproject.toml", "setup.cfg", "setup.py", "pipfile") or (
        name.startswith("requirements") and name.endswith((".txt", ".in"))
    ):
        return _python
    if name == "package.json":
        return _one(_NPM)
    if name == "go.mod":
        return _go
    if name == "gemfile" or name.endswith(".gemspec"):
        return _one(_GEM)
    if name == "cargo.toml":
        return _one(_CARGO)
    if (
        name in ("dockerfile", "containerfile")
        or name.endswith(".dockerfile")
        or name.startswith("dockerfile.")
    ):
        return _docker
    if name.endswith(".tf"):
        return _terraform
    return None


def dependencies(files: Sequence[DiffFile]) -> tuple[Dependency, ...]:
    """Every dependency an added or removed manifest line names, in diff order (no duplicates)."""
    out: list[Dependency] = []
    seen: set[tuple[str, str, str]] = set()
    for f in files:
        read = reader_for(f.path)
        if read is None:
            continue
        for change, lines in (("added", f.added), ("removed", f.removed)):
            for line in lines:
                text = line.text
                if text.lstrip().startswith(("#", "//")):
                    continue
                for name in read(text):
                    key = (name.casefold(), f.path, change)
                    if name.casefold() in _NOT_DEPS or key in seen:
                        continue
                    seen.add(key)
                    out.append(Dependency(name, f.path, change, text))  # type: ignore[arg-type]
    return tuple(out)
