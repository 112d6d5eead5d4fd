"""`--changed-since REF`: the prompts whose answers a change since REF may alter.

A prompt depends on its own folder, on the files under prompts/ its suite reads (`Suite.reads`: the ADR
library, the constitution) and on every module of the package that the code running its cases imports,
found by walking the imports of the package source with `ast` from the suite's module and the runner.
Nothing here names a module: a module split, a new helper or a moved function is followed as soon as it
is imported. Imports under `if TYPE_CHECKING:` do not run and are not followed; importlib calls are not
seen (none of the modules that run a prompt imports that way).
"""

from __future__ import annotations

import ast
import fnmatch
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

from adr_review.evals.golden import runner
from adr_review.evals.golden.cases import GoldenError
from adr_review.evals.golden.suites import suite_for

SOURCE_ROOT = (
    Path(__file__).resolve().parents[len(__name__.split(".")) - 1]
)  # the folder holding adr_review/ (app/ in a checkout)


def module_file(module: str, source_root: Path) -> Path | None:
    """The source file of a module of the package (a package's __init__.py), None if there is none."""
    base = source_root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported_names(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    """Every module name an import statement of the tree may load, TYPE_CHECKING blocks excepted."""
    package = module if is_package else module.rpartition(".")[0]
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
        stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(roots: Iterable[str], source_root: Path = SOURCE_ROOT) -> set[str]:
    """The roots and every module of their package they import, transitively, with the parent packages
    each import runs (importing a.b.c runs a/__init__.py and a/b/__init__.py)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        path = module_file(module, source_root)
        if path is None:
            continue
        seen.add(module)
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name in _imported_names(tree, module, path.name == "__init__.py"):
            if name.split(".", 1)[0] == parts[0]:
                todo.append(name)  # a name that is no module (`from m import function`) is skipped
    return seen


def prompt_dependencies(
    name: str, prompts_rel: str, source_root: Path = SOURCE_ROOT, source_rel: str = "app"
) -> list[str]:
    """fnmatch patterns, relative to the repository root, of every file a change to which selects `name`
    (`source_rel`: where the folder holding the package lies in the repository)."""
    patterns = [f"{prompts_rel}/{name}/*"]
    suite = suite_for(name)
    if suite is None:  # the run reports the missing suite; only the folder can fix it
        return patterns
    patterns += [f"{prompts_rel}/{shared}" for shared in suite.reads]
    modules = imported_modules([type(suite).__module__, runner.__name__], source_root)
    files = (module_file(m, source_root) for m in modules)
    prefix = f"{source_rel}/" if source_rel not in ("", ".") else ""
    patterns += sorted(prefix + p.relative_to(source_root).as_posix() for p in files if p is not None)
    return patterns


def changed_paths(ref: str, cwd: Path) -> tuple[Path, set[str]]:
    """(repo root, paths changed since the merge base of REF and HEAD, incl. uncommitted and untracked)."""

    def git(where: Path, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True)
        if done.returncode != 0:
            raise GoldenError(f"git {' '.join(args)}: {done.stderr.strip() or done.returncode}")
        return done.stdout

    root = Path(git(cwd, "rev-parse", "--show-toplevel").strip())
    try:
        base = git(root, "merge-base", ref, "HEAD").strip()
    except GoldenError:
        base = git(root, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()
    # Paths relative to the repository root: run from there (ls-files answers relative to its cwd).
    paths = set(git(root, "diff", "--name-only", "-z", base, "--").split("\0"))
    paths |= set(git(root, "ls-files", "-z", "--others", "--exclude-standard").split("\0"))
    return root, {p for p in paths if p}


def select_changed(
    names: Iterable[str], prompts_dir: Path, ref: str, source_root: Path = SOURCE_ROOT
) -> list[str]:
    """The prompts (in the given order) that depend on a path changed since REF."""
    root, paths = changed_paths(ref, prompts_dir)
    try:
        rel = prompts_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = "prompts"
    try:
        source_rel = source_root.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        source_rel = "app"
    chosen = []
    for name in names:
        patterns = prompt_dependencies(name, rel, source_root, source_rel)
        if any(fnmatch.fnmatch(path, pattern) for path in paths for pattern in patterns):
            chosen.append(name)
    return chosen
