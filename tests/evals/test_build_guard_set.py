"""The guard set's builder draws negatives of the positives' size: in a small repository made with
git, a 120-line commit that names an ADR gets the 118-line commit that names none, not one of the
one-line fixes around it; the first draw (same month, by hash) stays available."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def benchmark_script(name: str) -> ModuleType:
    """benchmarks/<name>.py as a module (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _builder() -> ModuleType:
    return benchmark_script("build_guard_set")


def _git(repo: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}  # fmt: skip
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def _commit(repo: Path, path: str, lines: int, message: str) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(f"value_{i} = {i}\n" for i in range(lines)))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("history") / "r"
    (repo / "docs" / "adr").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "docs" / "adr" / "0001-store.md").write_text("# ADR-0001: Store\n\n## Status\n\nAccepted\n")
    _commit(repo, "README.md", 1, "start")
    for i in range(6):
        _commit(repo, f"fix{i}.py", 1, f"fix {i}")
    _commit(repo, "go.sum", 50, "bump dependencies")  # a lockfile: the guard does not read it
    _commit(repo, "big.py", 118, "rewrite the scheduler")
    _commit(repo, "medium.py", 30, "add retries")
    _commit(repo, "store.py", 120, "Implement ADR-0001 in the store")
    return repo / ".git"


def _negatives(cases: list[dict[str, object]]) -> list[dict[str, object]]:
    return [c for c in cases if c["kind"] == "negative"]


def test_size_matching_picks_the_nearest_size_commits(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builder = _builder()
    monkeypatch.setitem(builder.FOLDERS, "t/r", ["docs/adr"])
    cases = builder.build_repo("t/r", repo, 2, "size")
    positive = next(c for c in cases if c["kind"] == "positive")
    assert positive["expected"] == ["0001-store.md"] and positive["lines"] == 120
    negatives = _negatives(cases)
    assert [n["lines"] for n in negatives] == [118, 30]
    assert all(n["for"] == positive["commit"] for n in negatives)


def test_the_month_draw_is_kept_and_both_are_deterministic(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder = _builder()
    monkeypatch.setitem(builder.FOLDERS, "t/r", ["docs/adr"])
    size = {n["commit"] for n in _negatives(builder.build_repo("t/r", repo, 2, "size"))}
    month = _negatives(builder.build_repo("t/r", repo, 2, "month"))
    assert len(month) == 2 and "lines" not in month[0]
    assert size == {n["commit"] for n in _negatives(builder.build_repo("t/r", repo, 2, "size"))}


def test_changed_lines_leave_out_the_adr_folder_and_ignored_files(repo: Path) -> None:
    builder = _builder()
    sizes = builder.changed_lines(repo, ["docs/adr"])
    assert sorted(sizes.values()) == [0] + [1] * 7 + [30, 118, 120]  # go.sum counts 0, the ADR file too


def test_a_commit_whose_diff_reads_a_blob_the_mirror_left_out_is_no_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mirror may leave out its largest blobs: `git diff` fails on a commit that reads one, so the
    builder must not make it a positive (nor a negative) that the eval then cannot rebuild."""
    repo = tmp_path / "r"
    (repo / "docs" / "adr").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "docs" / "adr" / "0001-store.md").write_text("# ADR-0001: Store\n\n## Status\n\nAccepted\n")
    _commit(repo, "README.md", 1, "start")
    _commit(repo, "store.py", 40, "Implement ADR-0001 in the store")
    _commit(repo, "data.py", 300, "Load the data set, per ADR-0001")
    _commit(repo, "more.py", 30, "Finish ADR-0001")
    blob = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD~1:data.py"], check=True, capture_output=True, text=True
    ).stdout.strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # what the mirror left out
    builder = _builder()
    monkeypatch.setitem(builder.FOLDERS, "t/r", ["docs/adr"])
    cases = builder.build_repo("t/r", repo / ".git", 2, "size")
    titles = {
        subprocess.run(
            ["git", "-C", str(repo), "log", "-1", "--format=%s", str(c["commit"])],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        for c in cases
        if c["kind"] == "positive"
    }
    assert titles == {"Implement ADR-0001 in the store", "Finish ADR-0001"}
