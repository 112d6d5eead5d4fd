"""Issue 17's feedback loop through the one PR use case, with the real SQLite store: a review shows four
findings with Adopted boxes; a collaborator ticks two, a stranger's tick is not counted, one finding is
dismissed by command; a revision of the ADR is pushed; the ticks survive the re-render; the store holds
what the report counts. The App path (edit events) and the Action path (boxes read on the next run)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from app.adapters.state_sqlite import SqliteStateStore
from app.core.feedback import read_feedback, read_ticks
from app.core.triggers import Actor, CommentEvent
from app.pipeline import feedback, pr
from app.pipeline.ports import PullRequestInfo
from tests.fakes.blindspot_answers import da_answer, judge_echo_answer, pm_answer
from tests.fakes.boxes import click_box
from tests.fakes.github_port import MemoryGitHub
from tests.fakes.llm import FakeLlm
from tests.pipeline.test_pr import ALICE, KAFKA, MALLORY, REPO, N, command, deps, github, plan, pr_event

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
QUOTE = "Topic retention is **30 days**"
NEW_HEAD = "n" * 40


def llm() -> FakeLlm:
    fake = FakeLlm()
    fake.on("recall-pre-gate", {"citations": []})
    fake.on(
        "blindspot-devils-advocate",
        da_answer(("Personal data kept forever", "No replay cost ceiling"), QUOTE),
    )
    fake.on("blindspot-premortem", pm_answer(("technical", "business_regulatory"), quote=QUOTE))
    fake.on(
        "blindspot-adjacent-domain", {"abstracted_decision": "x", "knowledge_basis": "x", "analogies": []}
    )
    fake.on("blindspot-judge", lambda req: judge_echo_answer(req.user))
    return fake


def review(gh: MemoryGitHub, store: SqliteStateStore, fake: FakeLlm, *, app: bool = False) -> pr.Published:
    (target,) = plan(pr_event(head_sha=gh.pulls[N].head_sha), gh).targets
    d = deps(gh, feedback=store, feedback_from_boxes=not app)
    d.llm = fake
    return pr.run_target(target, d)


def tick(gh: MemoryGitHub, ids: list[str], by: Actor, *, land: bool = True) -> CommentEvent:
    """What GitHub does when someone clicks boxes: the comment's body changes (`land`), and an edit
    event (sent with the body before) names who did it."""
    (ours,) = gh.our_comments(REPO, N)
    body = ours.body
    for fid in ids:
        body = click_box(body, fid)
    listed = gh.comments[N]
    if land:
        listed[listed.index(ours)] = dataclasses.replace(ours, body=body)
    return CommentEvent(
        action="edited", repo=REPO, number=N, on_pull_request=True, comment_id=ours.id, body=body,
        author_association="NONE", sender=by, default_branch="main", previous_body=ours.body,
    )  # fmt: skip


def apply(
    gh: MemoryGitHub, store: SqliteStateStore, event: CommentEvent, *, app: bool = False
) -> feedback.Applied | None:
    p = plan(event, gh)
    if p.kind not in ("feedback", "dismiss"):
        return None
    return feedback.apply(p, gh, store, REPO, boxes=not app)


def push_revision(gh: MemoryGitHub) -> None:
    head = dict(gh.files[gh.pulls[N].head_sha])
    head[KAFKA] = head[KAFKA].replace(b"Topic retention is **30 days**", b"Topic retention is **30 days**; addresses are dropped after delivery")  # fmt: skip
    gh.files[NEW_HEAD] = head
    gh.pulls[N] = dataclasses.replace(gh.pulls[N], head_sha=NEW_HEAD)


@pytest.fixture
def store() -> SqliteStateStore:
    return SqliteStateStore(":memory:")


def test_done_when_ticks_a_dismissal_and_a_revision_reach_the_report_and_ticks_survive_a_re_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's done-when, through the App's path: two of four boxes ticked by a collaborator, one
    by a stranger (not counted), one finding dismissed by command, a revision pushed, then the report."""
    from app.cli import main

    store = SqliteStateStore(tmp_path / "app.sqlite3")
    gh, fake = github(), llm()
    gh.permissions = {"alice": "write", "mallory": "read"}
    first = review(gh, store, fake, app=True)
    assert first.result == "created"
    ids = list(read_ticks(first.body))
    assert len(ids) == 4 and not any(read_ticks(first.body).values())

    assert apply(gh, store, tick(gh, ids[:2], ALICE), app=True).recorded  # type: ignore[union-attr]
    assert apply(gh, store, tick(gh, ids[2:3], MALLORY), app=True) is None  # read access: not counted
    bot = Actor("adr-review[bot]", "Bot")
    assert plan(tick(gh, ids[3:], bot, land=False), gh).kind == "ignore"  # our own edits: never feedback
    dismiss = command(f"/adr-review dismiss {ids[3]} we accept this risk\nsee ADR-0003")
    out = apply(gh, store, dismiss, app=True)
    assert out is not None and out.recorded and (555, "+1") in gh.reactions

    push_revision(gh)
    second = review(gh, store, fake, app=True)
    assert second.result == "edited"
    ticks = read_ticks(second.body)
    assert [fid for fid in ids if ticks[fid]] == ids[:3]  # every box as GitHub showed it stays ticked
    ledger = read_feedback(second.body).ledger
    assert len(ledger.revisions) == 2 and ledger.revised

    (adr,), findings = store.outcomes(REPO, 0, 2e9)
    assert (adr.path, adr.revisions, adr.revised) == (KAFKA, 2, True)
    assert {f.finding_id: f.adopted_by for f in findings if f.adopted} == {ids[0]: "alice", ids[1]: "alice"}
    dismissed = [(f.finding_id, f.dismissed_by, f.reason) for f in findings if f.dismissed]
    assert dismissed == [(ids[3], "alice", "we accept this risk\nsee ADR-0003")]
    store.close()

    assert (
        main(["report", "--store", str(tmp_path / "app.sqlite3"), "--repo", REPO, "--min-findings", "4"]) == 0
    )
    report = capsys.readouterr().out
    assert "| **50 %** (2 of 4) | 20 % | ✅ |" in report  # 2/4 adopted
    assert "| Dismissed (`/adr-review dismiss`) | 1 (25 %) |" in report
    assert "| **100 %** (1 of 1) | 10 % | ✅ |" in report  # the revision
    assert "**Sunset rule (ADR-0071): keep — both rates are at or above their lines**" in report
    assert main(["report", "--store", str(tmp_path / "app.sqlite3"), "--repo", REPO]) == 0
    assert "not enough" in capsys.readouterr().out.casefold()  # 4 findings are below the default sample


def test_the_action_reads_the_boxes_on_its_next_run_and_a_dismissal_from_a_fresh_store() -> None:
    gh, fake = github(), llm()
    first = review(gh, SqliteStateStore(":memory:"), fake)  # the PR run's store is gone after the job
    ids = list(read_ticks(first.body))
    tick(gh, ids[:1], ALICE)
    fresh = SqliteStateStore(":memory:")
    out = apply(gh, fresh, command(f"/adr-review dismiss {ids[1]} not our concern"))
    assert out is not None and out.recorded  # the store learnt the PR's findings from the comment
    again = review(gh, fresh, fake)  # the same content: nothing re-reviewed, the boxes read
    assert again.result == "unchanged"
    _, findings = fresh.outcomes(REPO, 0, 2e9)
    assert [f.finding_id for f in findings if f.adopted] == ids[:1]
    assert [f.finding_id for f in findings if f.dismissed] == ids[1:2]


def test_a_dismissal_of_an_id_the_pr_never_showed_says_so() -> None:
    gh, store = github(), SqliteStateStore(":memory:")
    review(gh, store, llm())
    out = apply(gh, store, command("/adr-review dismiss 0badc0de nope"))
    assert out is not None and not out.recorded
    assert (555, "confused") in gh.reactions
    assert "no finding `0badc0de`" in gh.comments[N][-1].body


def test_the_scheduled_run_reads_recent_prs_answers_and_write_access_dismissals() -> None:
    gh = github()
    gh.permissions = {"alice": "write", "mallory": "read"}
    first = review(gh, SqliteStateStore(":memory:"), llm())
    ids = list(read_ticks(first.body))
    tick(gh, ids[:2], ALICE)
    gh.add_comment(N, f"/adr-review dismiss {ids[2]} duplicate of ADR-0006", "alice")
    gh.add_comment(N, f"/adr-review dismiss {ids[3]} spam", "mallory")  # no write access: ignored
    gh.pulls[N + 1] = PullRequestInfo(REPO, N + 1, "x" * 40, "b" * 40, "main", REPO, False, "open")
    store = SqliteStateStore(":memory:")
    counts = feedback.sync_recent(gh, store, REPO, since=0)
    assert counts == {"pulls": 2, "comments": 1, "dismissed": 1}
    assert feedback.sync_recent(gh, store, REPO, since=0) == counts  # idempotent
    _, findings = store.outcomes(REPO, 0, 2e9)
    assert sorted(f.finding_id for f in findings if f.adopted) == sorted(ids[:2])
    assert [(f.finding_id, f.reason) for f in findings if f.dismissed] == [(ids[2], "duplicate of ADR-0006")]


def test_the_rendered_comment_with_boxes_and_ledger_is_a_snapshot(store: SqliteStateStore) -> None:
    import os
    import re

    body = review(github(), store, llm()).body
    body = re.sub(r" · [0-9.,]+ (?:s|min) · ", " · <duration> · ", body)  # the one measured value
    path = SNAPSHOTS / "comment_feedback.md"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(body, encoding="utf-8")
    assert body == path.read_text(encoding="utf-8"), f"{path} differs; UPDATE_SNAPSHOTS=1 after review"


def test_a_recorded_edit_payload_reads_the_body_before_and_each_delivery_is_its_own_plan() -> None:
    from app.core.events import read_event
    from app.core.marker import marker
    from app.pipeline.intake import intake
    from tests.server.conftest import payload

    data = payload("issue_comment__edited.payload.json")  # recorded by GitHub (tests/fixtures/github)
    data["issue"]["pull_request"] = {"url": "https://api.github.com/repos/x/y/pulls/1"}
    data["comment"]["body"] = marker("docs/adr/1.md", "k1") + "\n- [x] x <!-- adr-review:finding=aaaa0001 -->"
    event = read_event("issue_comment", data)
    assert isinstance(event, CommentEvent)
    assert event.previous_body == "You are totally right! I'll get this fixed right away."
    first, again = (
        intake("issue_comment", data, delivery_id="d1"),
        intake("issue_comment", data, delivery_id="d2"),
    )
    assert first.ignored is None and first.runs[0].run_key.endswith(f":edit:{event.comment_id}:d1")
    assert first.runs[0].run_key != again.runs[0].run_key
    data["comment"]["body"] = "no marker: somebody's own comment"
    assert intake("issue_comment", data, delivery_id="d3").ignored is not None


def test_an_adopted_finding_a_revision_no_longer_shows_is_still_counted_from_the_comment_alone() -> None:
    gh, fake = github(), llm()
    first = review(gh, SqliteStateStore(":memory:"), fake)
    ids = list(read_ticks(first.body))
    tick(gh, ids[:1], ALICE)
    push_revision(gh)  # the new content's review raises other findings: the old boxes go
    fake.on("blindspot-devils-advocate", da_answer(("Replay storms",), QUOTE))
    fake.on("blindspot-premortem", pm_answer(("technical",), quote=QUOTE))
    second = review(gh, SqliteStateStore(":memory:"), fake)
    assert ids[0] not in read_ticks(second.body) or read_ticks(second.body)[ids[0]]
    assert ids[0] in read_feedback(second.body).adopted
    store = SqliteStateStore(":memory:")  # the Action's scheduled run: only the comment to go by
    feedback.sync_pr(gh, store, REPO, N)
    (adr,), findings = store.outcomes(REPO, 0, 2e9)
    assert adr.revised and [f.finding_id for f in findings if f.adopted] == ids[:1]
