"""`--changed-since` follows the imports of the code that runs each prompt, not a list of paths.

The CLI-level cases (a changed prompt folder, the constitution, the ADR library) are in
test_prompt_eval.py; these pin the dependency derivation itself, on a synthetic package and on a
copy of the real one with a module split off.
"""

from __future__ import annotations

import inspect
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from adr_review.core.citations import verify_citations
from adr_review.core.extractive import pick_extractive
from adr_review.core.finding_checks import settle_unsure
from adr_review.core.findings import dedupe_findings
from adr_review.entrypoints.commands import eval_prompts
from adr_review.evals import retrieval as retrieval_eval
from adr_review.evals.golden.runner import discover_prompts
from adr_review.evals.golden.selection import (
    SOURCE_ROOT,
    imported_modules,
    prompt_dependencies,
    select_changed,
)
from adr_review.pipeline.adr.blindspot import run_blindspots
from adr_review.pipeline.adr.blindspot_cover import run_cover_checks
from adr_review.pipeline.adr.recall import run_recall
from adr_review.prompts import PROMPTS_DIR

BLINDSPOT = (
    "blindspot-devils-advocate",
    "blindspot-premortem",
    "blindspot-adjacent-domain",
    "blindspot-judge",
)
RECALL = "recall-pre-gate"
GUARD = "guard-check"
COVER_CHECK = "blindspot-cover-check"


def source_of(obj: object) -> str:
    """The repository path of the file that defines obj, wherever a split moved it."""
    path = inspect.getsourcefile(obj)  # type: ignore[arg-type]
    assert path is not None
    return Path(path).resolve().relative_to(SOURCE_ROOT.parent).as_posix()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_import_walk_follows_lazy_relative_and_package_imports(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/entry.py": """
                from typing import TYPE_CHECKING
                from pkg.helpers import helper          # a function: its module is followed
                import json                             # outside the package: ignored
                if TYPE_CHECKING:
                    from pkg import typing_only
                def run():
                    from .lazy import thing             # relative, inside a function
                    return helper, thing
            """,
            "pkg/helpers.py": "from pkg.sub import leaf\ndef helper(): ...\n",
            "pkg/lazy.py": "thing = 1\n",
            "pkg/sub/__init__.py": "from . import nested\n",
            "pkg/sub/leaf.py": "",
            "pkg/sub/nested.py": "",
            "pkg/typing_only.py": "",
            "pkg/unrelated.py": "import pkg.entry\n",
        },
    )
    assert imported_modules(["pkg.entry"], tmp_path) == {
        "pkg",
        "pkg.entry",
        "pkg.helpers",
        "pkg.lazy",
        "pkg.sub",
        "pkg.sub.leaf",
        "pkg.sub.nested",
    }


def test_each_prompt_depends_on_the_code_that_runs_it_and_nothing_else() -> None:
    recall = set(prompt_dependencies(RECALL, "prompts"))
    assert {source_of(run_recall), source_of(verify_citations)} <= recall
    assert source_of(dedupe_findings) not in recall
    for name in BLINDSPOT:
        deps = set(prompt_dependencies(name, "prompts"))
        # findings are verified like citations (the same quote check), but extractive recall is recall's own
        assert {source_of(run_blindspots), source_of(dedupe_findings), source_of(verify_citations)} <= deps
        assert source_of(pick_extractive) not in deps
        assert source_of(run_cover_checks) in deps  # the Judge's exclusions go through the check
    cover = set(prompt_dependencies(COVER_CHECK, "prompts"))
    assert {source_of(run_cover_checks), source_of(settle_unsure), source_of(verify_citations)} <= cover
    assert source_of(pick_extractive) not in cover
    unrelated = {
        source_of(eval_prompts),
        source_of(retrieval_eval),
    }  # nothing that runs a prompt imports them
    for name in (RECALL, *BLINDSPOT, COVER_CHECK):
        assert not unrelated & set(prompt_dependencies(name, "prompts")), name


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def split_repo(tmp_path: Path) -> Path:
    """A repository with the real prompts/ and a copy of app/adr_review/ in which the module defining the citation
    verification had a helper split off into a new module (the kind of split a hand-kept list misses)."""
    repo = tmp_path / "repo"
    shutil.copytree(PROMPTS_DIR, repo / "prompts")
    shutil.copytree(
        SOURCE_ROOT / "adr_review", repo / "app" / "adr_review", ignore=shutil.ignore_patterns("__pycache__")
    )
    split_from = repo / source_of(pick_extractive)
    split_from.write_text(
        split_from.read_text(encoding="utf-8")
        + "\nfrom adr_review.core.split_off_helper import HELPER  # noqa\n",
        encoding="utf-8",
    )
    write(
        repo,
        {
            "app/adr_review/core/split_off_helper.py": "HELPER = 1\n",
            "app/adr_review/core/nobody_imports.py": "X = 1\n",
        },
    )
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    return repo


@pytest.mark.parametrize(
    ("changed", "expected"),
    [
        (
            "app/adr_review/core/split_off_helper.py",
            sorted((GUARD, RECALL)),
        ),  # imported transitively through extractive.py: recall's pipeline and the guard's core
        ("app/adr_review/core/nobody_imports.py", []),
        (
            "app/adr_review/evals/golden/runner.py",
            sorted((RECALL, *BLINDSPOT, GUARD, COVER_CHECK)),
        ),  # runs every prompt's cases
    ],
)
def test_a_module_split_off_is_followed_without_listing_it(
    split_repo: Path, changed: str, expected: list[str]
) -> None:
    path = split_repo / changed
    path.write_text(path.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")
    prompts = split_repo / "prompts"
    assert (
        select_changed(discover_prompts(prompts), prompts, "main", source_root=split_repo / "app") == expected
    )
