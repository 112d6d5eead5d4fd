"""Payload parsing: real payloads through githubkit, with the lenient fallback for schema drift."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from app.adapters import events
from app.adapters.events import EventError, parse_event
from app.core.triggers import CommentEvent, OtherEvent, PullRequestEvent, ReindexEvent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "github-payloads"


def payload(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def test_verbatim_fixtures_are_the_shared_recordings() -> None:
    assert SHARED.is_dir(), f"shared payloads missing at {SHARED}"
    verbatim = [
        p for p in FIXTURES.glob("*.json") if p.name.endswith(".payload.json") or "with-null-body" in p.name
    ]
    assert len(verbatim) >= 10
    for path in verbatim:
        assert json.loads(path.read_text()) == json.loads((SHARED / path.name).read_text()), path.name


def test_derived_fixtures_are_their_original_plus_the_documented_edits() -> None:
    manifest = json.loads((FIXTURES / "derived.json").read_text())
    entries = {k: v for k, v in manifest.items() if not k.startswith("_")}
    assert entries
    for name, spec in entries.items():
        expected = copy.deepcopy(payload(spec["from"]))
        for dotted, value in spec["set"].items():
            *parents, last = dotted.split(".")
            node = expected
            for key in parents:
                node = node[key]
            assert last in node or last == "pull_request", f"{name}: {dotted} is not a field of the original"
            node[last] = value
        assert payload(name) == expected, name


def test_pull_request_synchronize() -> None:
    event = parse_event("pull_request", payload("pull_request__synchronize.payload.json"))
    assert event == PullRequestEvent(
        event_name="pull_request",
        action="synchronize",
        repo="Codertocat/Hello-World",
        number=2,
        draft=False,
        head_sha="ec26c3e57ca3a959ca5aad62de7213c562f8c821",
        base_sha="f95f852bd8fca8fcc58a9a2d6c842781e32a215e",
        base_ref="master",
        head_repo="Codertocat/Hello-World",
        sender=event.sender,
        default_branch="master",
    )
    assert event.sender.login == "Codertocat" and event.sender.type == "User"


def test_githubkit_and_the_lenient_models_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """synchronize validates under githubkit; forcing the fallback must read the same event."""
    data = payload("pull_request__synchronize.payload.json")
    assert type(events._githubkit("pull_request", data)).__name__ == "WebhookPullRequestSynchronize"
    strict = parse_event("pull_request", data)
    monkeypatch.setattr(events, "_githubkit", lambda name, p: None)
    assert parse_event("pull_request", data) == strict
    comment = payload("issue_comment__created.pr-command.json")
    monkeypatch.undo()
    assert type(events._githubkit("issue_comment", comment)).__name__ == "WebhookIssueCommentCreated"
    strict_comment = parse_event("issue_comment", comment)
    monkeypatch.setattr(events, "_githubkit", lambda name, p: None)
    assert parse_event("issue_comment", comment) == strict_comment


def test_schema_drift_falls_back_to_the_lenient_models(caplog: pytest.LogCaptureFixture) -> None:
    """The recorded `opened` payload lacks labels[].archived_by, which githubkit now requires."""
    caplog.set_level("INFO", logger="app.adapters.events")
    event = parse_event("pull_request", payload("pull_request__opened.payload.json"))
    assert isinstance(event, PullRequestEvent) and event.action == "opened" and event.number == 2
    assert any("reading it leniently" in r.getMessage() for r in caplog.records)


def test_pull_request_target_is_read_like_pull_request() -> None:
    event = parse_event("pull_request_target", payload("pull_request__opened.fork.json"))
    assert isinstance(event, PullRequestEvent)
    assert event.event_name == "pull_request_target"
    assert event.head_repo == "octo-fork/Hello-World" and event.is_fork


def test_comment_on_a_pull_request_vs_an_issue() -> None:
    on_pr = parse_event("issue_comment", payload("issue_comment__created.pr-command.json"))
    on_issue = parse_event("issue_comment", payload("issue_comment__created.payload.json"))
    assert isinstance(on_pr, CommentEvent) and isinstance(on_issue, CommentEvent)
    assert on_pr.on_pull_request and not on_issue.on_pull_request
    assert on_pr.body == "/adr-review" and on_pr.author_association == "COLLABORATOR"
    assert on_pr.comment_id == 492700400 and on_pr.number == 2


def test_reindex_events() -> None:
    schedule = parse_event("schedule", payload("schedule.json"), repo_hint="o/r")
    assert schedule == ReindexEvent(event_name="schedule", repo="o/r", default_branch="")
    dispatch = parse_event("workflow_dispatch", payload("workflow_dispatch.json"), repo_hint="o/r")
    assert dispatch == ReindexEvent("workflow_dispatch", "Codertocat/Hello-World", "master")


def test_other_events_and_broken_payloads() -> None:
    assert parse_event("ping", payload("ping__payload.json")) == OtherEvent("ping", None)
    assert parse_event("push", {"action": None}) == OtherEvent("push", None)
    with pytest.raises(EventError, match="pull_request"):
        parse_event("pull_request", {"action": "opened"})
