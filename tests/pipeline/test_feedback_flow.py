"""Issue 17's feedback loop through the one PR use case, with the real SQLite store: a review shows four
findings with Adopted boxes; a collaborator ticks two, a stranger's tick is not counted, one finding is
dismissed by command; a revision of the ADR is pushed; the ticks survive the re-render; the store holds
what the report counts. The App path (edit events) and the Action path (boxes read on the next run)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.core.feedback import read_feedback
from adr_review.core.feedback_boxes import read_ticks
from adr_review.core.triggers import Actor, CommentEvent
from adr_review.pipeline.plans import pr
from adr_review.pipeline.ports import PullRequestInfo
from adr_review.pipeline.reporting import feedback
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
    from adr_review.cli import main

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
    assert (
        "**Sunset rule (≥ 20 % of findings adopted, ≥ 10 % of ADRs revised): keep — both rates are at or above their lines**"
        in report
    )
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
    body = re.sub(r'"s":\{"\d{4}-\d{2}"', '"s":{"<month>"', body)  # and the month it was paid in
    path = SNAPSHOTS / "comment_feedback.md"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(body, encoding="utf-8")
    assert body == path.read_text(encoding="utf-8"), f"{path} differs; UPDATE_SNAPSHOTS=1 after review"


def test_a_recorded_edit_payload_reads_the_body_before_and_each_delivery_is_its_own_plan() -> None:
    from adr_review.core.events import read_event
    from adr_review.core.marker import marker
    from adr_review.pipeline.server.intake import intake
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


# --- one finding counts once (issue 24): a revision's critics reword the same four findings -----------

CONTEXT_QUOTE = "The Data Platform team already runs Kafka (Amazon MSK) for clickstream data"
# (critic, title, gap, quote, dedupe_group): the first review, then the same four in other words, under
# other topic keys, some quoting another passage (tests/core/test_finding_identity.py PAIRS).
FIRST = [
    ("da", "Personal data is kept for 30 days in the topic", "OrderPlaced now carries the delivery address and phone number, and the topic keeps it for 30 days with no deletion path for erasure requests.", QUOTE, "pii-retention"),
    ("da", "Compacted topic keeps every order forever", "orders.latest.v1 keeps the latest state indefinitely, including personal data, with no retention or deletion policy.", QUOTE, "compaction-forever"),
    ("operational", "Bridge lag hides behind a 60-second alert", "The bridge can fall minutes behind during a sale before the 60 second lag alert fires, and no consumer is told.", QUOTE, "bridge-lag"),
    ("business_regulatory", "MSK cost is not budgeted", "The ~$2,100 a month for MSK comes on top of JetStream and no budget owner approved it.", CONTEXT_QUOTE, "msk-cost"),
]  # fmt: skip
REWORDED = [
    ("da", "Customer addresses and phone numbers stay in Kafka for a month", "The self-contained events put the phone number and delivery address on the bus for 30 days; the ADR gives no way to honour an erasure request.", QUOTE, "erasure-requests"),
    ("da", "Indefinite retention in orders.latest.v1", "The compacted topic has no retention limit, so the latest state of every order, with addresses, is kept forever.", CONTEXT_QUOTE, "latest-topic-retention"),
    ("operational", "The JetStream bridge can lag silently at sale peaks", "At sale peaks the Kafka to JetStream bridge may fall behind; only a 60 second alert exists and consumers are not told that they lag.", QUOTE, "silent-bridge-delay"),
    ("business_regulatory", "Running two buses doubles the infrastructure bill", "Keeping JetStream while adding a 3-broker MSK cluster adds about $2,100 monthly, and the ADR does not say who pays.", CONTEXT_QUOTE, "two-bus-bill"),
]  # fmt: skip


def critics_say(fake: FakeLlm, items: list[tuple[str, str, str, str, str]]) -> None:
    """Script the Devil's Advocate ("da") and the pre-mortem (by category) with these findings."""
    da = da_answer((), QUOTE)
    pm = pm_answer((), quote=QUOTE)
    for critic, title, gap, quote, group in items:
        base = {"title": title, "gap": gap, "quote": quote, "section": "Decision", "dedupe_group": group}
        if critic == "da":
            da["counter_arguments"].append(
                {**base, "perspective": "cost", "argument": gap, "severity": "high",
                 "actionability": "revise_adr", "suggested_action": "Say how."}
            )  # fmt: skip
        else:
            pm["scenarios"].append(
                {**base, "category": critic, "scenario": gap, "severity_score": 4, "probability": 4,
                 "impact": 4, "risk_priority": 64, "suggested_action": "Plan for it"}
            )  # fmt: skip
    fake.on("blindspot-devils-advocate", da)
    fake.on("blindspot-premortem", pm)


def revise(gh: MemoryGitHub, head: str, old: bytes, new: bytes) -> None:
    files = dict(gh.files[gh.pulls[N].head_sha])
    assert old in files[KAFKA]
    files[KAFKA] = files[KAFKA].replace(old, new)
    gh.files[head] = files
    gh.pulls[N] = dataclasses.replace(gh.pulls[N], head_sha=head)


def test_done_when_a_reworded_revision_keeps_the_four_findings_and_their_ticks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from adr_review.cli import main

    store = SqliteStateStore(tmp_path / "app.sqlite3")
    gh, fake = github(), llm()
    critics_say(fake, FIRST)
    first = review(gh, store, fake, app=True)
    ids = list(read_ticks(first.body))
    assert len(ids) == 4
    assert apply(gh, store, tick(gh, ids[:2], ALICE), app=True).recorded  # type: ignore[union-attr]

    critics_say(fake, REWORDED)
    revise(gh, NEW_HEAD, b"Topic retention is **30 days**", b"Topic retention is **30 days**; addresses are dropped after delivery")  # fmt: skip
    second = review(gh, store, fake, app=True)
    assert second.result == "edited"
    assert "Running two buses doubles the infrastructure bill" in second.body  # the new words are shown
    assert read_ticks(second.body) == dict(zip(ids, [True, True, False, False], strict=True))

    revise(gh, "m" * 40, b"Topic retention is **30 days**;", b"Topic retention is **30 days** (reviewed);")
    critics_say(fake, FIRST)  # and back to the first words, on a third content
    third = review(gh, store, fake, app=True)
    assert read_ticks(third.body) == dict(zip(ids, [True, True, False, False], strict=True))
    assert len(read_feedback(third.body).ledger.revisions) == 3
    (adr,), findings = store.outcomes(REPO, 0, 2e9)
    assert (adr.revisions, adr.revised, sorted(f.finding_id for f in findings)) == (3, True, sorted(ids))
    store.close()

    args = ["report", "--store", str(tmp_path / "app.sqlite3"), "--repo", REPO, "--min-findings", "4"]
    assert main(args) == 0
    report = capsys.readouterr().out
    assert "| **50 %** (2 of 4) | 20 % | ✅ |" in report  # not 2 of 8, nor 2 of 12
    assert (
        "**Sunset rule (≥ 20 % of findings adopted, ≥ 10 % of ADRs revised): keep — both rates are at or above their lines**"
        in report
    )
