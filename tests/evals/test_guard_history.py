"""The guard benchmark's history reading: ADR references found and masked, ADR numbers read from file
names, and a case rebuilt from a real git repository in tmp_path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from adr_review.evals.guard_history import (
    adr_files_at,
    adr_number,
    commits,
    diff_without,
    mask,
    message_body,
    referenced_names,
    referenced_numbers,
)


@pytest.mark.parametrize(
    ("message", "numbers"),
    [
        ("Implement ADR-038: rename proto packages", {38}),
        ("abci: VoteInfo. See ADR 12", {12}),
        ("per ADR0037 and adr_5", {37, 5}),
        ("feat(policy): follow MADR 055", {55}),
        ("Update ADRs and the address book", set()),
        ("cardano: fix", set()),
    ],
)
def test_references(message: str, numbers: set[int]) -> None:
    assert referenced_numbers(message) == numbers


def test_mask_removes_numbers_and_folder_links() -> None:
    folder = "docs/adr"
    message = "Implement ADR-038 (see docs/adr/038-x.md) for the store"
    assert referenced_names(message, folder) == {"038-x.md"}
    assert mask(message, folder) == "Implement (see for the store"
    assert referenced_numbers(mask(message, folder)) == set()


def test_the_pr_body_is_the_message_body_masked_without_its_trailers() -> None:
    body = (
        "Moves the store to the new driver, as ADR-038 decided\n"
        "(docs/adr/038-store.md).\n\n"
        "Signed-off-by: A Person <a@example.org>\n"
        "Co-authored-by: Bot <bot@example.org>\n"
    )
    got = message_body(body, "docs/adr")
    assert got == "Moves the store to the new driver, as decided"  # the link line masked away
    assert referenced_numbers(got) == set() and "Signed" not in got and "Bot" not in got
    assert message_body("", "docs/adr") == ""


@pytest.mark.parametrize(
    ("path", "number"),
    [
        ("0012-use-kafka.md", 12),
        ("tendermint-core/adr-023-ABCI-propose-tx.md", 23),
        ("2021-06-05_001-record-architectural-decisions.md", 1),
        ("095-mesh-scoped-zone-ingress-egress.md", 95),
        ("README.md", None),
    ],
)
def test_adr_number(path: str, number: int | None) -> None:
    assert adr_number(path) == number


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def test_a_case_is_rebuilt_from_history(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / "docs" / "adr").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "docs" / "adr" / "0001-postgres.md").write_text(
        "# ADR-0001: PostgreSQL\n\n## Status\n\nAccepted\n"
    )
    (repo / "app.py").write_text("db = 'postgres'\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    (repo / "app.py").write_text("db = 'postgres'  # one database per service\n")
    (repo / "docs" / "adr" / "0001-postgres.md").write_text(
        "# ADR-0001: PostgreSQL\n\n## Status\n\nAccepted\n\nMore.\n"
    )
    _git(repo, "commit", "-qam", "Implement ADR-0001 in the app")
    git_dir = repo / ".git"
    newest = next(commits(git_dir))
    assert newest.title == "Implement ADR-0001 in the app" and set(newest.files) == {
        "app.py",
        "docs/adr/0001-postgres.md",
    }
    assert referenced_numbers(newest.message) == {1}
    diff = diff_without(git_dir, newest.parent, newest.sha, "docs/adr")
    assert "app.py" in diff and "docs/adr" not in diff
    at_parent = adr_files_at(git_dir, newest.parent, "docs/adr")
    assert at_parent == {"0001-postgres.md": b"# ADR-0001: PostgreSQL\n\n## Status\n\nAccepted\n"}
