"""The one plan executor (app/adr_review/pipeline/plans/carry_out.py): each plan kind makes the same things happen on
GitHub whichever lifecycle carries it out, the Action's Inline or the App's Enqueue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.config import REPO_CONFIG_PATH, RepoConfig
from adr_review.core.triggers import DENIED_TEXT, HELP_TEXT
from adr_review.pipeline.checkpoint import memo_for
from adr_review.pipeline.locks import StoreLocks
from adr_review.pipeline.plans.carry_out import Lifecycle, carry_out
from adr_review.pipeline.plans.folders import FolderCache
from adr_review.pipeline.plans.inline import Inline
from adr_review.pipeline.plans.notices import CAPPED_MARKER_PATH
from adr_review.pipeline.plans.publish import Published
from adr_review.pipeline.plans.targets import Plan
from adr_review.pipeline.server.app_runs import Enqueue
from adr_review.prompts import packaged
from tests.fakes.github_port import MemoryGitHub

REPO, N = "acme/shop", 7


@dataclass
class Recorded:
    """A PlanReport that records what it was told (no rule of its own)."""

    calls: list[tuple[str, str]] = field(default_factory=list)

    def notify(self, level: str, message: str, path: str | None) -> None:
        self.calls.append(("notify", message))

    def started(self, plan: Plan) -> None:
        self.calls.append(("started", plan.kind))

    def done(self, plan: Plan, summary: str) -> None:
        self.calls.append(("done", summary))

    def config_error(self, plan: Plan) -> None:
        self.calls.append(("config_error", plan.config_error or ""))

    def reindexed(self, plan: Plan, rows: Sequence[tuple[str, int]], answers: dict[str, int] | str) -> None:
        self.calls.append(("reindexed", str(rows)))

    def reviewing(self, plan: Plan) -> None:
        self.calls.append(("reviewing", plan.kind))

    def reviewed(self, plan: Plan, outcomes: Sequence[Published]) -> None:
        self.calls.append(("reviewed", str(len(outcomes))))


def _folders() -> FolderCache:
    def unused(*_: Any) -> Any:
        raise AssertionError("no folder is read for this plan")

    return FolderCache(unused, unused)


def inline(gh: MemoryGitHub, store: SqliteStateStore, *, dry_run: bool = False) -> Inline:
    return Inline(
        gh, REPO, store, _folders(), packaged(), "https://github.com", lambda c: None, dry_run=dry_run
    )


def enqueue(gh: MemoryGitHub, store: SqliteStateStore, queued: list[Plan] | None = None) -> Enqueue:
    store.ensure_run("plan:test", {"repo": REPO, "pr": N})
    memo = memo_for(store, "plan:test", owner="t")
    sink = queued if queued is not None else []
    return Enqueue(gh, REPO, store, _folders(), memo, StoreLocks(store, "t"), queue=sink.append)


LIFECYCLES: dict[str, Callable[[MemoryGitHub, SqliteStateStore], Lifecycle]] = {
    "action": inline,
    "app": enqueue,
}
CONFIG = RepoConfig()
PLANS = {
    "help": Plan(
        "help", "adr-review: posted the command help.", react_comment_id=55, reply=HELP_TEXT, number=N
    ),
    "deny": Plan(
        "deny",
        "adr-review: eve may not run commands.",
        react_comment_id=56,
        reply=DENIED_TEXT.format(login="eve"),
        number=N,
    ),  # fmt: skip
    "config_error": Plan(
        "config_error", "adr-review: bad config", config_error="adr_path: Extra inputs", number=N
    ),  # fmt: skip
    "capped": Plan(
        "review",
        "adr-review: 0 of 2 reviewed",
        config=CONFIG,
        number=N,
        head_sha="h" * 40,
        capped=("docs/adr/0001-a.md", "docs/adr/0002-b.md"),
    ),  # fmt: skip
    "no_adr": Plan("review", "adr-review: #7 changes no ADR.", config=CONFIG, number=N, head_sha="h" * 40),
    "ignore": Plan("ignore", "adr-review: #7 is a draft."),
}


def _effects(gh: MemoryGitHub) -> list[tuple[str, str]]:
    """What GitHub shows afterwards: reactions, and each comment's first line (its marker, if any)."""
    shown = [("reaction", f"{cid}:{content}") for cid, content in gh.reactions]
    return shown + [("comment", c.body.splitlines()[0]) for c in gh.comments.get(N, [])]


@pytest.mark.parametrize("name", list(PLANS))
def test_a_plan_does_the_same_on_github_in_the_action_and_in_the_app(name: str) -> None:
    seen: dict[str, list[tuple[str, str]]] = {}
    reported: dict[str, list[tuple[str, str]]] = {}
    for who, make in LIFECYCLES.items():
        gh, store, report = MemoryGitHub(REPO), SqliteStateStore(":memory:"), Recorded()
        carry_out(PLANS[name], make(gh, store), report)
        seen[who], reported[who] = _effects(gh), report.calls
    assert seen["action"] == seen["app"]
    assert reported["action"] == reported["app"]


@pytest.mark.parametrize(
    ("name", "effects", "report"),
    [
        (
            "help",
            [("reaction", "55:eyes"), ("comment", HELP_TEXT.splitlines()[0])],
            ("done", "adr-review: posted the command help."),
        ),  # fmt: skip
        (
            "config_error",
            [("comment", f"<!-- adr-review:v1 path={REPO_CONFIG_PATH} key=config-error -->")],
            ("config_error", "adr_path: Extra inputs"),
        ),  # fmt: skip
        (
            "capped",
            [("comment", f"<!-- adr-review:v1 path={CAPPED_MARKER_PATH} key=capped-hhhhhhhhhhhh -->")],
            ("done", "adr-review: 0 of 2 reviewed"),
        ),  # fmt: skip
        ("no_adr", [], ("done", "adr-review: #7 changes no ADR.")),
        ("ignore", [], ("done", "adr-review: #7 is a draft.")),
    ],
)
def test_what_each_plan_makes_happen(
    name: str, effects: list[tuple[str, str]], report: tuple[str, str]
) -> None:
    gh, store, rec = MemoryGitHub(REPO), SqliteStateStore(":memory:"), Recorded()
    carry_out(PLANS[name], inline(gh, store), rec)
    assert _effects(gh) == effects
    assert rec.calls[0] == ("started", PLANS[name].kind) and rec.calls[-1] == report


def test_a_denial_gets_the_confused_reaction_and_its_reply_once_per_user_and_pr() -> None:
    gh, store = MemoryGitHub(REPO), SqliteStateStore(":memory:")
    carry_out(PLANS["deny"], inline(gh, store), Recorded())
    carry_out(PLANS["deny"], inline(gh, store), Recorded())
    assert gh.reactions == [(56, "confused"), (56, "confused")]
    assert len(gh.comments[N]) == 1 and "eve" in gh.comments[N][0].body


@pytest.mark.parametrize("name", ["config_error", "capped"])
def test_the_plans_own_comment_is_edited_in_place_on_a_second_run(name: str) -> None:
    gh, store = MemoryGitHub(REPO), SqliteStateStore(":memory:")
    for _ in range(2):
        carry_out(PLANS[name], inline(gh, store), Recorded())
    assert len(gh.comments[N]) == 1 and gh.calls.count("edit_comment") == 1


def test_the_apps_plan_stages_are_posted_once_even_when_the_plan_run_is_retried() -> None:
    gh, store = MemoryGitHub(REPO), SqliteStateStore(":memory:")
    for _ in range(2):  # the same plan run, resumed: its stages come from the checkpoints
        carry_out(PLANS["config_error"], enqueue(gh, store), Recorded())
    assert len(gh.comments[N]) == 1 and "edit_comment" not in gh.calls


@pytest.mark.parametrize("name", list(PLANS))
def test_a_dry_run_writes_nothing_and_still_reports(name: str) -> None:
    gh, store, rec = MemoryGitHub(REPO), SqliteStateStore(":memory:"), Recorded()
    carry_out(PLANS[name], inline(gh, store, dry_run=True), rec)
    assert _effects(gh) == [] and [c for c in gh.calls if c != "find_comment"] == []
    assert rec.calls[0][0] == "started" and rec.calls[-1][0] in ("done", "config_error")


def test_a_fork_prs_read_only_plan_writes_nothing_in_the_action_only() -> None:
    """The fork's `pull_request` token is read-only in Actions; the App's installation token is not."""
    plan = Plan("review", "fork", read_only=True, config=CONFIG, number=N, head_sha="h" * 40,
                capped=("docs/adr/0001-a.md",))  # fmt: skip
    action, app = MemoryGitHub(REPO), MemoryGitHub(REPO)
    carry_out(plan, inline(action, SqliteStateStore(":memory:")), Recorded())
    carry_out(plan, enqueue(app, SqliteStateStore(":memory:")), Recorded())
    assert _effects(action) == [] and len(_effects(app)) == 1


def test_the_reviews_go_to_the_lifecycle() -> None:
    from dataclasses import replace

    from adr_review.pipeline.plans.targets import Target

    target = Target(REPO, N, "h" * 40, "b" * 40, "docs/adr/0001-a.md", "0" * 64, "key", CONFIG)
    plan = replace(PLANS["no_adr"], targets=(target,))
    queued: list[Plan] = []
    rec = Recorded()
    carry_out(plan, enqueue(MemoryGitHub(REPO), SqliteStateStore(":memory:"), queued), rec)
    assert queued == [plan] and rec.calls[-2:] == [("reviewing", "review"), ("reviewed", "0")]
