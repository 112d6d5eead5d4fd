"""The decision table: real GitHub payloads (tests/fixtures/github/) -> what the Action does."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from adr_review.config import DEFAULT_ADR_GLOBS
from adr_review.core.events import read_event
from adr_review.core.marker import marker
from adr_review.core.triggers import (
    ALL_STAGES,
    Actor,
    ChangedFile,
    CommentEvent,
    Event,
    PullRequestEvent,
    adr_glob_roots,
    changed_adrs,
    decide,
    glob_regex,
    is_authorized,
    parse_command,
    screen,
    select_adrs,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github"


def load(name: str, event: str | None = None) -> Event:
    event_name = event or name.split("__")[0].replace(".json", "")
    return read_event(
        event_name, json.loads((FIXTURES / name).read_text()), repo_hint="Codertocat/Hello-World"
    )


def comment(body: str, association: str = "COLLABORATOR", **changes: object) -> CommentEvent:
    base = load("issue_comment__created.pr-command.json")
    assert isinstance(base, CommentEvent)
    return dataclasses.replace(base, body=body, author_association=association, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fixture", "kind", "read_only"),
    [
        ("pull_request__opened.payload.json", "review", False),
        ("pull_request__synchronize.payload.json", "review", False),
        ("pull_request__reopened.payload.json", "review", False),
        ("pull_request__ready_for_review.payload.json", "review", False),
        ("pull_request__opened.with-null-body.json", "review", False),
        ("pull_request__opened.with-organization.payload.json", "review", False),
        ("pull_request__closed.payload.json", "ignore", False),
        ("pull_request__converted_to_draft.payload.json", "ignore", False),
        ("pull_request__opened.draft.json", "ignore", False),
        ("pull_request__opened.by-bot.json", "ignore", False),
        ("pull_request__opened.fork.json", "review", True),
        ("issue_comment__created.payload.json", "ignore", False),  # a plain issue, not a PR
        ("issue_comment__edited.payload.json", "ignore", False),
        ("issue_comment__created.pr-command.json", "review", False),
        ("issue_comment__created.pr-command.none.json", "deny", False),
        ("schedule.json", "reindex", False),
        ("workflow_dispatch.json", "reindex", False),
        ("ping__payload.json", "ignore", False),
    ],
)
def test_decision_for_real_payloads(fixture: str, kind: str, read_only: bool) -> None:
    decision = decide(load(fixture))
    assert decision.kind == kind
    assert decision.read_only is read_only
    assert decision.summary.startswith("adr-review: ")
    assert "\n" not in decision.summary


def test_drafts_are_reviewed_when_configured() -> None:
    assert decide(load("pull_request__opened.draft.json"), review_drafts=True).kind == "review"
    assert "draft" in decide(load("pull_request__opened.draft.json")).summary


def test_fork_pr_on_pull_request_target_may_comment() -> None:
    event = load("pull_request__opened.fork.json", "pull_request_target")
    assert isinstance(event, PullRequestEvent) and event.is_fork
    decision = decide(event)
    assert decision.kind == "review" and not decision.read_only


def test_fork_with_deleted_head_repo_is_a_fork() -> None:
    event = load("pull_request__opened.payload.json")
    assert isinstance(event, PullRequestEvent)
    assert not event.is_fork
    assert dataclasses.replace(event, head_repo=None).is_fork
    assert not dataclasses.replace(event, head_repo="codertocat/hello-world").is_fork  # case-insensitive


@pytest.mark.parametrize(
    ("body", "kind", "stages"),
    [
        ("/adr-review", "all", ALL_STAGES),
        ("/adr-review\n\nplease look again", "all", ALL_STAGES),
        ("  /ADR-Review  ", "all", ALL_STAGES),
        ("\n\n/adr-review recall", "recall", frozenset({"recall"})),
        ("/adr-review blind-spots", "blind-spots", frozenset({"blindspots"})),
        ("/adr-review blindspots", "blind-spots", frozenset({"blindspots"})),
        ("/adr-review help", "help", frozenset()),
        ("/adr-review frobnicate", "unknown", frozenset()),
    ],
)
def test_parse_command(body: str, kind: str, stages: frozenset[str]) -> None:
    command = parse_command(body)
    assert command is not None
    assert command.kind == kind
    assert command.stages == stages


@pytest.mark.parametrize(
    "body",
    [
        "LGTM",
        "> /adr-review",  # a quote of someone else's command
        "please run /adr-review",  # a mention in prose
        "/adr-reviewer",  # another command
        "thanks\n/adr-review",  # only the first line counts
        "",
    ],
)
def test_not_a_command(body: str) -> None:
    assert parse_command(body) is None
    assert decide(comment(body)).kind == "ignore"


@pytest.mark.parametrize(
    ("association", "permission", "allowed"),
    [
        ("OWNER", None, True),
        ("MEMBER", None, True),
        ("COLLABORATOR", None, True),
        ("collaborator", None, True),
        ("CONTRIBUTOR", None, False),
        ("FIRST_TIME_CONTRIBUTOR", None, False),
        ("NONE", None, False),
        ("NONE", "read", False),
        ("NONE", "triage", False),
        ("CONTRIBUTOR", "write", True),  # an org member with private membership
        ("NONE", "admin", True),
    ],
)
def test_is_authorized(association: str, permission: str | None, allowed: bool) -> None:
    assert is_authorized(association, permission) is allowed


@pytest.mark.parametrize(
    ("body", "kind", "stages", "react"),
    [
        ("/adr-review", "review", ALL_STAGES, True),
        ("/adr-review recall", "review", frozenset({"recall"}), True),
        ("/adr-review blind-spots", "review", frozenset({"blindspots"}), True),
        ("/adr-review help", "help", None, True),
        ("/adr-review nonsense", "help", None, False),
    ],
)
def test_collaborator_commands(body: str, kind: str, stages: frozenset[str] | None, react: bool) -> None:
    decision = decide(comment(body))
    assert decision.kind == kind
    assert decision.react is react
    if stages is not None:
        assert decision.stages == stages
        assert decision.forced
        assert decision.reply is None
    else:
        assert decision.reply and "/adr-review blind-spots" in decision.reply


def test_non_collaborator_gets_nothing_run_and_one_reply_after_the_permission_check() -> None:
    event = comment("/adr-review", "NONE")
    first = decide(event)
    assert first.kind == "deny" and first.needs_permission_check and first.reply is None
    final = decide(event, permission="read")
    assert (
        final.kind == "deny" and not final.needs_permission_check and final.react
    )  # 😕, not a new reply each time
    assert final.reply is not None and "@Codertocat" in final.reply and "nothing was run" in final.reply
    assert decide(event, permission="write").kind == "review"


def test_help_is_for_everyone() -> None:
    assert decide(comment("/adr-review help", "NONE")).kind == "help"


def test_bot_commands_are_ignored_even_from_collaborators() -> None:
    event = comment("/adr-review", sender=Actor("github-actions[bot]", "Bot"))
    assert screen(event) is not None
    assert decide(event).kind == "ignore"


@pytest.mark.parametrize(
    "body",
    [
        "/adr-review",  # a command: deleting it must not run it again
        marker("docs/adr/0001-use-kafka.md", "rk1-abc") + "\n- [x] Adopted",  # one of our comments
    ],
)
def test_a_deleted_comment_is_screened_out_and_runs_nothing(body: str) -> None:
    event = comment(body, action="deleted")
    first = screen(event)
    assert first is not None and first.kind == "ignore"
    assert "issue_comment.deleted" in first.summary
    assert decide(event).kind == "ignore"


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("docs/adr/**", "docs/adr/0001-use-kafka.md", True),
        ("docs/adr/**", "docs/adr/sub/dir/0002.md", True),
        ("docs/adr/**", "docs/adr.md", False),
        ("docs/adr/**", "docs/adrs/0001.md", False),
        ("docs/adr/**", "src/docs/adr/0001.md", False),
        ("docs/adr", "docs/adr/0001.md", True),  # a bare folder
        ("docs/adr/", "docs/adr/0001.md", True),
        ("docs/adr/*.md", "docs/adr/0001.md", True),
        ("docs/adr/*.md", "docs/adr/sub/0001.md", False),  # * stays in one segment
        ("**/adr/*.md", "adr/0001.md", True),  # ** spans zero directories
        ("**/adr/*.md", "services/pay/adr/0001.md", True),
        ("docs/adr/00??-*.md", "docs/adr/0042-x.md", True),
        ("docs/adr/[0-9]*.md", "docs/adr/7-x.md", True),
        ("docs/adr/[!0-9]*.md", "docs/adr/7-x.md", False),
        ("./adr/**", "adr/0001.md", True),
        ("docs/a+b/**", "docs/a+b/1.md", True),  # regex metacharacters are literal
        ("docs/a+b/**", "docs/aab/1.md", False),
    ],
)
def test_glob(pattern: str, path: str, hit: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is hit


def test_changed_adrs_keeps_markdown_under_the_globs_that_still_exist() -> None:
    files = [
        ChangedFile("docs/adr/0002-b.md", "modified"),
        ChangedFile("docs/adr/0001-a.md", "added"),
        ChangedFile("docs/adr/0003-old.md", "removed"),
        ChangedFile("docs/adr/0004-new.md", "renamed", previous_path="docs/adr/0004-old.md"),
        ChangedFile("docs/adr/diagram.png", "added"),
        ChangedFile("docs/adr/README.md", "modified"),
        ChangedFile("src/main.py", "modified"),
    ]
    kept = changed_adrs(files, DEFAULT_ADR_GLOBS, accept=lambda p: not p.endswith("README.md"))
    assert [f.path for f in kept] == ["docs/adr/0001-a.md", "docs/adr/0002-b.md", "docs/adr/0004-new.md"]


def test_select_adrs_and_roots() -> None:
    paths = ["adr/1.md", "adr/1.md", "doc/adr/2.markdown", "docs/x.md", "docs/decisions/3.MD"]
    assert select_adrs(paths, DEFAULT_ADR_GLOBS) == ["adr/1.md", "doc/adr/2.markdown", "docs/decisions/3.MD"]
    assert adr_glob_roots(["docs/adr/**", "**/adr/*.md", "adr"]) == ["", "adr", "docs/adr"]


@pytest.mark.parametrize(
    "path",
    [
        "docs/adr/0001-record-architecture-decisions.md",  # log4brains' default too
        "doc/adr/0001-record-architecture-decisions.md",  # adr-tools' `adr init` default
        "docs/decisions/0000-use-markdown-architectural-decision-records.md",  # MADR
        "doc/architecture/decisions/0001-record-architecture-decisions.md",  # adr-tools' own repository
        "docs/architecture/decisions/0002-use-postgres.md",
        "adr/0003-x.md",
        "docs/adrs/0004-x.md",
        "docs/architecture/adr/0005-x.md",
        "decisions/0006-x.md",
        "adrs/0007-x.md",
        "docs/ADR/0008-x.md",
        "doc/decisions/0009-x.md",
        "architecture/decisions/0010-x.md",
    ],
)
def test_the_default_adr_paths_cover_the_layouts_real_repositories_use(path: str) -> None:
    assert select_adrs([path], DEFAULT_ADR_GLOBS) == [path]


def test_the_default_adr_paths_are_the_documented_ones() -> None:
    """docs/config.md spells out the defaults; the README and docs/action.md name the first of them."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    config_doc = (root / "docs" / "config.md").read_text(encoding="utf-8")
    block = config_doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert tuple(yaml.safe_load(block)["adr_paths"]) == DEFAULT_ADR_GLOBS
    for glob in DEFAULT_ADR_GLOBS:
        assert f"| `{glob.removesuffix('/**')}`" in config_doc, glob  # in the table, with its count
    for doc in ("README.md", "docs/action.md"):
        assert "doc/architecture/decisions/" in (root / doc).read_text(encoding="utf-8"), doc
    assert select_adrs(["docs/adr/0001-a.md", "src/adr/0001-a.md"], ["src/adr/**"]) == ["src/adr/0001-a.md"]
