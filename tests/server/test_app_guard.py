"""The ADR guard through the App: a pull_request delivery's plan run in-process (AppExecutor and the
worker pool), the real PyGithub adapter against the fake GitHub server, the production index. Its
comment is the Action's, word for word."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses

from adr_review.adapters.index_open import open_index
from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.core.comments import GUARD_MARKER_PATH
from adr_review.core.feedback import without_ledger
from adr_review.core.marker import read_marker, without_marker
from adr_review.pipeline.keys import index_slot
from adr_review.pipeline.server.intake import delivery_record, intake
from adr_review.pipeline.server.worker import WorkerPool
from tests.entrypoints import test_action as action
from tests.entrypoints.guard_case import (
    ADDED_LINE,
    ADR_FILES,
    AUDIT_CHANGE,
    AUDIT_DECISION,
    BASE_CODE,
    CHECK_ANSWER,
    DECISION,
    MONGO_CHANGE,
    TITLE,
)
from tests.fakes.github_api import FakeGitHub
from tests.fakes.github_server import FakeGitHubServer
from tests.fakes.llm import FakeLlm
from tests.server.harness import BASE, HEAD, INSTALLATION, PR, REPO, pr_payload
from tests.server.test_app_runs import env  # noqa: F401  (the App in-process, over the gh fixture below)

CONFIG = ".github/adr-review.yml"


def seed() -> dict[str, Any]:
    base = {**ADR_FILES, **BASE_CODE, CONFIG: "guard:\n  enabled: true\n"}
    files = [{"filename": p, "status": "modified"} for p in MONGO_CHANGE]
    pull = {"head_sha": HEAD, "base_sha": BASE, "base_ref": "main", "title": TITLE, "files": files}
    repo = {
        "default_branch": "main",
        "installation_id": INSTALLATION,
        "refs": {"main": base, BASE: base, HEAD: {**base, **MONGO_CHANGE}},
        "pulls": {str(PR): pull},
        "permissions": {"alice": "admin"},
    }
    return {"repos": {REPO: repo}}


@pytest.fixture
def gh() -> Iterator[FakeGitHubServer]:  # test_app_runs' env fixture runs the App over this server
    with FakeGitHubServer() as server:
        server.seed(seed())
        yield server


@pytest.fixture
def app(
    request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[FakeGitHubServer, WorkerPool, SqliteStateStore]:
    app_env: dict[str, Any] = request.getfixturevalue("env")  # test_app_runs': the App over `gh` above
    app_env["deps"].open_index = lambda repo, d, config: open_index(
        tmp_path / "ix" / index_slot(repo, d), config.retrieval
    )  # the production index: the guard reads its background statistics
    model = FakeLlm().on("guard-check", CHECK_ANSWER)  # the model the Action's harness is given too
    app_env["deps"].llm_for = lambda _config: model
    return request.getfixturevalue("gh"), app_env["pool"], app_env["store"]


def deliver(
    store: SqliteStateStore, pool: WorkerPool, guid: str, head: str = HEAD, action: str = "opened"
) -> None:
    data = pr_payload(head=head, action=action)
    result = intake("pull_request", data, delivery_id=guid)
    assert result.ignored is None, result.ignored
    store.accept_delivery(
        delivery_record("1", guid, "pull_request", json.dumps(data).encode(), result), result.runs
    )
    while pool.run_once("t:w0"):
        pass
    assert not [(i.run_key, i.error) for i in store.items() if i.state == "failed"]


def action_guard_text(tmp_path: Path) -> str:
    """The same PR through the Action (in-memory GitHub, responses): its guard comment, without the marker
    and the ledger."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        gh = FakeGitHub(action.REPO, "master").install(rsps)
        for path, text in {**ADR_FILES, **BASE_CODE}.items():
            gh.put_file("master", path, text.encode())
        gh.trees[action.BASE] = dict(gh.trees["master"])
        pull = gh.add_pull(
            2, head=action.HEAD, base=action.BASE, changes={p: t.encode() for p, t in MONGO_CHANGE.items()}
        )
        pull.title = TITLE
        h = action.Harness(tmp_path, gh, real_index=True)
        h.llm.on("guard-check", CHECK_ANSWER)
        assert h.run("pull_request", "pull_request__opened.payload.json", inputs={"guard": "true"}).code == 0
        [body] = [str(c["body"]) for c in gh.comments_on(2)]
    return without_ledger(without_marker(body))


def test_the_app_posts_the_guard_comment_the_action_posts(
    app: tuple[FakeGitHubServer, WorkerPool, SqliteStateStore], tmp_path: Path
) -> None:
    gh, pool, store = app
    deliver(store, pool, "g1")
    [comment] = gh.comments_on(REPO, PR)
    marker = read_marker(comment["body"])
    assert marker is not None and marker.path == GUARD_MARKER_PATH and marker.head == HEAD
    text = without_ledger(without_marker(comment["body"]))  # the ledger's run key names the repo and PR
    assert DECISION in text and ADDED_LINE in text and "⚠️ Conflicts" in text  # checked by the model
    assert [i.kind for i in store.items()] == ["plan"]  # no ADR changed: nothing queued for review
    (tmp_path / "action").mkdir()
    assert text == action_guard_text(tmp_path / "action")


def test_a_push_that_changes_nothing_the_guard_reads_writes_nothing(
    app: tuple[FakeGitHubServer, WorkerPool, SqliteStateStore],
) -> None:
    gh, pool, store = app
    deliver(store, pool, "g1")
    pushed = "e" * 40  # a new head with the same trees (a rebase onto the same base): the same diff
    pull = dict(seed()["repos"][REPO]["pulls"][str(PR)], head_sha=pushed)
    gh.seed({"repos": {REPO: {"refs": {pushed: gh.files_at(REPO, HEAD)}, "pulls": {str(PR): pull}}}})
    deliver(store, pool, "g2", head=pushed, action="synchronize")
    assert [i.kind for i in store.items()] == ["plan", "plan"]  # the second plan ran, and found the key
    assert gh.counters["comments_created"] == 1 and gh.counters["comments_edited"] == 0
    assert len(gh.comments_on(REPO, PR)) == 1


def test_a_ticked_guard_box_and_a_dismiss_are_recorded_as_guard_answers(
    app: tuple[FakeGitHubServer, WorkerPool, SqliteStateStore],
) -> None:
    """The App reads a guard answer's tick from the edit (by a person with write access) and a
    `dismiss` of its id, as for findings; the store keeps them under the guard comment, so the report
    counts them apart from the findings."""
    from adr_review.core.feedback_boxes import read_ticks
    from adr_review.core.report import build_report
    from tests.fakes.boxes import click_box
    from tests.server.test_app_runs import comment_payload, drain, edit_payload
    from tests.server.test_app_runs import deliver as deliver_event

    gh, pool, store = app
    deliver(store, pool, "g1")
    [comment] = gh.comments_on(REPO, PR)
    [answer] = read_ticks(comment["body"])  # the one conflict's Adopted box
    before = comment["body"]
    comment["body"] = after = click_box(before, answer)  # what GitHub holds after alice's click
    deliver_event(store, "issue_comment", edit_payload(before, after, comment["id"], "alice"), "g2")
    deliver_event(store, "issue_comment", comment_payload(f"/adr-review dismiss {answer} not ours"), "g3")
    drain(pool)
    adrs, outcomes = store.outcomes(REPO, 0, 2e9)
    assert [(o.finding_id, o.path, o.severity, o.adopted_by, o.dismissed_by, o.reason) for o in outcomes] == [
        (answer, GUARD_MARKER_PATH, "conflicts", "alice", "alice", "not ours")
    ]
    assert outcomes[0].title.startswith("ADR-0001: ") and all(o.guard for o in (*adrs, *outcomes))
    report = build_report(adrs, outcomes, repo=REPO, since=0, until=2e9)
    assert (report.findings_shown, report.adrs_reviewed) == (0, 0)
    assert (report.guard.shown, report.guard.adopted, report.guard.dismissed) == (1, 1, 1)


def test_the_app_holds_a_change_against_the_decision_its_body_names(
    app: tuple[FakeGitHubServer, WorkerPool, SqliteStateStore],
) -> None:
    gh, pool, store = app
    named = "f" * 40  # a PR that shortens the audit retention ADR-0005 decided, and names it
    files = [{"filename": p, "status": "modified"} for p in AUDIT_CHANGE]
    pull = {"head_sha": named, "base_sha": BASE, "base_ref": "main", "title": "Tidy the ops settings",
            "body": "As ADR 5 says.", "files": files}  # fmt: skip
    base = gh.files_at(REPO, BASE)
    gh.seed({"repos": {REPO: {"refs": {named: {**base, **AUDIT_CHANGE}}, "pulls": {str(PR): pull}}}})
    deliver(store, pool, "g1", head=named)
    [comment] = gh.comments_on(REPO, PR)
    text = without_ledger(without_marker(comment["body"]))
    assert "ADR-0005" in text and "named in the pull request" in text and AUDIT_DECISION in text
