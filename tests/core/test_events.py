"""Payload reading (app/adr_review/core/events.py): one field map, two modes, checked on every recorded payload."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from adr_review.core.events import FIELDS, EventError, ack_event, delivery_facts, read_event
from adr_review.core.triggers import CommentEvent, OtherEvent, PullRequestEvent, ReindexEvent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github"
# sha256 of each verbatim copy's source in shared/github-payloads (see README.md there)
SOURCES = FIXTURES / "SHA256SUMS"


def payload(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def _sources() -> dict[str, str]:
    """Verbatim copy -> sha256 of its source, from SHA256SUMS (`sha256sum` format)."""
    return {
        name: digest for digest, name in (line.split("  ", 1) for line in SOURCES.read_text().splitlines())
    }


def test_verbatim_fixtures_are_the_recorded_sources() -> None:
    sums = _sources()
    verbatim = [
        p for p in FIXTURES.glob("*.json") if p.name.endswith("payload.json") or "with-null-body" in p.name
    ]
    assert len(verbatim) >= 10
    assert {p.name for p in verbatim} == set(sums)
    for path in verbatim:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sums[path.name], path.name


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
    event = read_event("pull_request", payload("pull_request__synchronize.payload.json"))
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
        title="Update the README with new information.",
        labels=("bug",),
    )
    assert event.sender.login == "Codertocat" and event.sender.type == "User"


def _recorded() -> list[Path]:
    return sorted(set(FIXTURES.glob("*.json")) - {FIXTURES / "derived.json"})


@pytest.mark.parametrize("path", _recorded(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_recorded_payload_is_read(path: Path) -> None:
    name = path.name.split("__", 1)[0].split(".", 1)[0]
    event = read_event(name, json.loads(path.read_text()), repo_hint="o/r")
    expected = {"pull_request": PullRequestEvent, "issue_comment": CommentEvent}
    expected_type = expected.get(
        name, ReindexEvent if name in ("schedule", "workflow_dispatch") else OtherEvent
    )
    assert isinstance(event, expected_type), path.name
    if isinstance(event, PullRequestEvent):
        assert event.repo and event.number and len(event.head_sha) == 40 and event.base_ref


def test_all_fourteen_recorded_pull_request_payloads_are_read() -> None:
    """githubkit's models rejected 13 of these 14 over label fields the decision never reads."""
    recorded = sorted(FIXTURES / name for name in _sources() if name.startswith("pull_request__"))
    assert len(recorded) == 14
    events = [read_event("pull_request", json.loads(p.read_text())) for p in recorded]
    assert all(isinstance(e, PullRequestEvent) and e.repo == "Codertocat/Hello-World" for e in events)
    assert {e.action for e in events if isinstance(e, PullRequestEvent)} == {
        "closed",
        "converted_to_draft",
        "opened",
        "ready_for_review",
        "reopened",
        "synchronize",
    }


def test_fields_github_adds_or_leaves_out_do_not_matter() -> None:
    data = payload("pull_request__synchronize.payload.json")
    expected = read_event("pull_request", data)
    drifted = copy.deepcopy(data)
    drifted["a_field_from_next_year"] = {"x": 1}
    drifted["pull_request"]["labels"] = [{"name": "bug", "archived_by": None, "new": True}]
    del drifted["pull_request"]["draft"]
    assert read_event("pull_request", drifted) == expected  # a label gains fields: still read
    drifted["pull_request"]["draft"] = None
    drifted["pull_request"]["head"]["repo"] = None  # the fork was deleted
    gone = read_event("pull_request", drifted)
    assert isinstance(gone, PullRequestEvent) and not gone.draft and gone.head_repo is None


def test_pull_request_target_is_read_like_pull_request() -> None:
    event = read_event("pull_request_target", payload("pull_request__opened.fork.json"))
    assert isinstance(event, PullRequestEvent)
    assert event.event_name == "pull_request_target"
    assert event.head_repo == "octo-fork/Hello-World" and event.is_fork


def test_comment_on_a_pull_request_vs_an_issue() -> None:
    on_pr = read_event("issue_comment", payload("issue_comment__created.pr-command.json"))
    on_issue = read_event("issue_comment", payload("issue_comment__created.payload.json"))
    assert isinstance(on_pr, CommentEvent) and isinstance(on_issue, CommentEvent)
    assert on_pr.on_pull_request and not on_issue.on_pull_request
    assert on_pr.body == "/adr-review" and on_pr.author_association == "COLLABORATOR"
    assert on_pr.comment_id == 492700400 and on_pr.number == 2


def test_reindex_events() -> None:
    schedule = read_event("schedule", payload("schedule.json"), repo_hint="o/r")
    assert schedule == ReindexEvent(event_name="schedule", repo="o/r", default_branch="")
    dispatch = read_event("workflow_dispatch", payload("workflow_dispatch.json"), repo_hint="o/r")
    assert dispatch == ReindexEvent("workflow_dispatch", "Codertocat/Hello-World", "master")


def test_other_events_and_broken_payloads() -> None:
    assert read_event("ping", payload("ping__payload.json")) == OtherEvent("ping", None)
    assert read_event("push", {"action": None}) == OtherEvent("push", None)
    with pytest.raises(EventError, match="pull_request"):
        read_event("pull_request", {"action": "opened"})


@pytest.mark.parametrize("path", _recorded(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_ack_reads_every_recorded_payload_as_the_plan_run_does(path: Path) -> None:
    """One field map: the webhook's screen and the plan run cannot read a delivery differently."""
    name = path.name.split("__", 1)[0].split(".", 1)[0]
    data = json.loads(path.read_text())
    assert ack_event(name, data) == read_event(name, data), path.name


REQUIRED = {
    "pull_request": [
        "action",
        "repository.full_name",
        "number",
        "pull_request.head.sha",
        "pull_request.base.sha",
        "pull_request.base.ref",
        "sender.login",
    ],  # fmt: skip
    "issue_comment": ["action", "repository.full_name", "issue.number", "comment.id", "sender.login"],
}
SAMPLES = {
    "pull_request": "pull_request__synchronize.payload.json",
    "issue_comment": "issue_comment__created.pr-command.json",
}


@pytest.mark.parametrize(
    ("name", "dotted"), [(n, d) for n, fields in REQUIRED.items() for d in fields], ids=str
)
@pytest.mark.parametrize("broken", ["missing", "null", "mistyped"])
def test_a_required_field_that_cannot_be_read(name: str, dotted: str, broken: str) -> None:
    """read_event names the field; the ack ignores the delivery (an OtherEvent the screen drops)."""
    data = payload(SAMPLES[name])
    *parents, last = dotted.split(".")
    node = data
    for key in parents:
        node = node[key]
    if broken == "missing":
        del node[last]
    else:
        node[last] = None if broken == "null" else ("7" if isinstance(node[last], int) else 7)
    with pytest.raises(EventError, match=rf"cannot read the {name} event payload: {dotted} "):
        read_event(name, data)
    action = data.get("action")
    assert ack_event(name, data) == OtherEvent(name, action if isinstance(action, str) else None)


def test_the_required_fields_are_exactly_those_the_tests_break() -> None:
    """A field made optional (or a new required one) shows here, so the table above stays whole."""
    for name, dotted in REQUIRED.items():
        required = [".".join(s.path) for s in FIELDS[name].values() if s.required]
        assert sorted(required) == sorted(dotted), name


@pytest.mark.parametrize(
    ("data", "facts"),
    [
        (
            {"installation": {"id": 42}, "repository": {"full_name": "o/r"}, "action": "opened"},
            {"installation_id": 42, "repo": "o/r", "action": "opened"},
        ),  # fmt: skip
        (
            {"installation": {"id": "42"}, "repository": {}, "action": ""},
            {"installation_id": None, "repo": None, "action": None},
        ),  # fmt: skip
        ({"zen": "Keep it logically awesome."}, {"installation_id": None, "repo": None, "action": None}),
    ],
)
def test_delivery_facts(data: dict[str, Any], facts: dict[str, Any]) -> None:
    assert delivery_facts(data) == facts
