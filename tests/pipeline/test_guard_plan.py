"""The guard's planning rules: which changed files it reads, the `check` command, the diff budget, the
plan's checkpoint form, and that `guard:` leaves the review's run keys alone."""

from __future__ import annotations

import pytest

from adr_review.config import GuardConfig, RepoConfig
from adr_review.core.commands import HELP_TEXT, parse_command
from adr_review.core.triggers import ChangedFile
from adr_review.pipeline.code_guard.guard_run import budget_diff, guarded_files
from adr_review.pipeline.keys import config_hash
from adr_review.pipeline.plans.targets import GuardTarget, Plan

ADR_GLOBS = ["docs/adr/**"]


@pytest.mark.parametrize(
    ("path", "paths", "ignore", "read"),
    [
        ("services/order/store.py", [], [], True),
        ("docs/adr/0001-postgres.md", [], [], False),  # an ADR: the review's business
        ("poetry.lock", [], [], False),  # a lockfile: built-in ignore
        ("web/node_modules/react/index.js", [], [], False),  # vendored
        ("api/orders.pb.go", [], [], False),  # generated
        ("services/order/store.py", ["web/**"], [], False),  # outside `paths`
        ("web/src/button.tsx", ["web/**"], [], True),
        ("services/order/fixtures.sql", [], ["*.sql"], False),  # the repo's own ignore
    ],
)
def test_which_changed_files_the_guard_reads(
    path: str, paths: list[str], ignore: list[str], read: bool
) -> None:
    files = [ChangedFile(path, "modified")]
    assert bool(guarded_files(files, ADR_GLOBS, paths, ignore)) is read


def test_check_is_a_command_with_its_help_line() -> None:
    command = parse_command("/adr-review check")
    assert command is not None and command.kind == "check" and command.stages == frozenset()
    assert "`/adr-review check`" in HELP_TEXT


def test_a_diff_over_the_budget_is_cut_at_a_whole_file_and_says_so() -> None:
    one = "diff --git a/f{0} b/f{0}\n--- a/f{0}\n+++ b/f{0}\n@@ -1 +1 @@\n-a\n+b\n"
    diff = "".join(one.format(i) for i in range(10))
    kept, notes = budget_diff(diff, limit=len(one.format(0)) * 3 + 5)
    assert kept == "".join(one.format(i) for i in range(3))
    assert notes == [f"the diff is {len(diff):,} characters; the guard read its first 3 of 10 files"]
    assert budget_diff(diff, limit=len(diff)) == (diff, [])


def test_a_plan_with_a_guard_survives_its_checkpoint() -> None:
    plan = Plan(
        "guard",
        "s",
        number=7,
        config=RepoConfig(),
        guard=GuardTarget("h" * 40, "b" * 40, "t", "", "p", True, "n"),
    )
    assert Plan.from_json(plan.to_json()) == plan


def test_the_guard_section_is_not_part_of_the_reviews_key() -> None:
    on = RepoConfig(guard=GuardConfig(enabled=True, paths=["src/**"]))
    assert config_hash(on) == config_hash(RepoConfig())
    assert config_hash(RepoConfig(language="ja")) != config_hash(RepoConfig())
