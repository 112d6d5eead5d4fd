"""The ADR guard through `adr-review action`: the real PyGithub adapter against the in-memory GitHub
(tests/fakes/github_api.py, which renders a PR's diff from its trees), the production index, the
runner's file commands. Guard off (the default) is every test of test_action.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import responses

from adr_review.core.comments import GUARD_MARKER_PATH
from adr_review.core.feedback import without_ledger
from adr_review.core.marker import read_marker, without_marker
from adr_review.core.results import Usage
from adr_review.pipeline.plans.budget import month_of, published_spend
from tests.entrypoints.guard_case import (
    ADDED_LINE,
    ADR_FILES,
    AUDIT_CHANGE,
    AUDIT_DECISION,
    BASE_CODE,
    BUTTON,
    CHECK_ANSWER,
    CHECK_REASON,
    DECISION,
    MONGO_CHANGE,
    TITLE,
    UNRELATED_CHANGE,
    UNRELATED_TITLE,
)
from tests.entrypoints.test_action import BASE, COMMAND_COMMENT_ID, HEAD, REPO, Harness, Result
from tests.fakes.github_api import FakeGitHub

OPENED = "pull_request__opened.payload.json"
GUARD_ON = {"guard": "true"}


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        gh = FakeGitHub(REPO, "master").install(rsps)
        for path, text in {**ADR_FILES, **BASE_CODE}.items():
            gh.put_file("master", path, text.encode())
        gh.trees[BASE] = dict(gh.trees["master"])
        gh.known_comment_ids.add(COMMAND_COMMENT_ID)
        harness = Harness(tmp_path, gh, real_index=True)
        harness.llm.on("guard-check", CHECK_ANSWER)
        yield harness


def open_code_pr(
    h: Harness, changes: dict[str, str], head: str = HEAD, title: str = TITLE, body: str | None = None
) -> None:
    pull = h.gh.add_pull(2, head=head, base=BASE, changes={p: t.encode() for p, t in changes.items()})
    pull.title, pull.body = title, body


def guard_comments(h: Harness) -> list[dict[str, object]]:
    return [
        c for c in h.gh.comments_on(2) if (m := read_marker(str(c["body"]))) and m.path == GUARD_MARKER_PATH
    ]


def writes(h: Harness) -> int:
    return h.gh.count("POST", r"/comments$") + h.gh.count("PATCH", r"/comments/")


def run(h: Harness, **inputs: str) -> Result:
    r = h.run("pull_request", OPENED, inputs={**GUARD_ON, **inputs})
    assert r.code == 0, r.stdout
    return r


def test_a_dependency_an_accepted_adr_rejected_gets_one_comment_citing_it(h: Harness) -> None:
    open_code_pr(h, MONGO_CHANGE)
    r = run(h)
    [comment] = guard_comments(h)
    body = str(comment["body"])
    assert "ADR-0001" in body and DECISION in body  # the decision sentence, verbatim
    assert ADDED_LINE in body  # the diff line that matched it
    assert "ADR-0004" not in body  # the proposed MongoDB ADR is not enforced
    assert [c for c in h.gh.comments_on(2) if c is not comment] == []  # no review comment: no ADR changed
    assert "docs/adr/0001-postgres.md; comment created" in r.summary
    # the model's check, one call for the one implicated ADR: a verdict shown with both quotes checked
    assert h.llm.counts() == {"guard-check": 1}
    assert "⚠️ Conflicts" in body and CHECK_REASON in body


def test_the_guard_comment_books_what_its_checks_cost_once_per_run_for_the_monthly_cap(h: Harness) -> None:
    h.llm.on("guard-check", CHECK_ANSWER, usage=Usage(calls=1, cost_usd=0.25))
    open_code_pr(h, MONGO_CHANGE)
    run(h)
    month = month_of(time.time())
    [comment] = guard_comments(h)
    assert published_spend([str(comment["body"])], month) == pytest.approx(0.25)  # what other jobs' cap reads
    run(h)  # the same head again: nothing called, nothing booked twice
    [comment] = guard_comments(h)
    assert published_spend([str(comment["body"])], month) == pytest.approx(0.25)
    head = "d" * 40  # a push that changes the diff: one more check, its cost added
    open_code_pr(h, {**MONGO_CHANGE, BUTTON: BASE_CODE[BUTTON].replace("Save", "Store")}, head=head)
    r = h.run("pull_request", OPENED, inputs=GUARD_ON, edits={"pull_request.head.sha": head})
    assert r.code == 0, r.stdout
    [comment] = guard_comments(h)
    assert h.llm.counts() == {"guard-check": 2}
    assert published_spend([str(comment["body"])], month) == pytest.approx(0.5)


def test_without_a_key_the_guard_lists_the_decision_and_calls_no_model(h: Harness) -> None:
    open_code_pr(h, MONGO_CHANGE)
    r = run(h, **{"anthropic-api-key": ""})
    [comment] = guard_comments(h)
    body = str(comment["body"])
    assert DECISION in body and ADDED_LINE in body
    assert "⚠️ Conflicts" not in body and h.llm.calls() == []
    assert "comment created" in r.summary


def test_a_model_answer_whose_quote_is_not_a_changed_line_is_not_shown_as_a_conflict(h: Harness) -> None:
    h.llm.on("guard-check", {**CHECK_ANSWER, "diff_quote": "import psycopg  # not what this change adds"})
    open_code_pr(h, MONGO_CHANGE)
    run(h)
    [comment] = guard_comments(h)
    body = str(comment["body"])
    assert DECISION in body and "⚠️ Conflicts" not in body
    assert "not an added or removed line of this diff" in body  # listed apart, as unverified


def test_a_code_pr_that_touches_no_decision_gets_no_comment_and_says_so(h: Harness) -> None:
    open_code_pr(h, UNRELATED_CHANGE, title=UNRELATED_TITLE)
    r = run(h)
    assert h.gh.comments_on(2) == [] and writes(h) == 0
    assert "no decision implicated" in r.summary and "no decision implicated" in r.stdout


def test_a_decision_the_pr_body_names_is_held_against_the_change(h: Harness) -> None:
    open_code_pr(h, AUDIT_CHANGE, title="Tidy the ops settings")
    run(h, **{"anthropic-api-key": ""})
    assert guard_comments(h) == []  # the diff alone is too weak a match for the floor

    open_code_pr(h, AUDIT_CHANGE, head="e" * 40, title="Tidy the ops settings", body="As ADR 5 says.")
    edits = {"pull_request.head.sha": "e" * 40}
    r = h.run("pull_request", OPENED, inputs={**GUARD_ON, "anthropic-api-key": ""}, edits=edits)
    assert r.code == 0, r.stdout
    [comment] = guard_comments(h)
    body = str(comment["body"])
    assert "ADR-0005" in body and "named in the pull request" in body
    assert AUDIT_DECISION in body and "`ops/logging.py` line 1: `AUDIT_DAYS = 90" in body


def test_a_second_run_on_the_same_head_writes_nothing_and_calls_no_model(h: Harness) -> None:
    open_code_pr(h, MONGO_CHANGE)
    run(h)
    before, calls = writes(h), len(h.llm.calls())
    r = run(h)
    assert writes(h) == before == 1 and len(h.llm.calls()) == calls == 1  # the first run's check only
    assert "already up to date" in r.stdout
    assert len(guard_comments(h)) == 1


def test_a_push_that_no_longer_implicates_the_decision_edits_the_comment_to_say_so(h: Harness) -> None:
    open_code_pr(h, MONGO_CHANGE)
    run(h)
    open_code_pr(h, UNRELATED_CHANGE, head="d" * 40, title=UNRELATED_TITLE)
    r = h.run("pull_request", OPENED, inputs=GUARD_ON, edits={"pull_request.head.sha": "d" * 40})
    assert r.code == 0, r.stdout
    [comment] = guard_comments(h)
    text = without_ledger(without_marker(str(comment["body"])))  # what a reader sees
    assert "No decision is implicated any more" in text and "ADR-0001" not in text
    assert h.gh.count("POST", r"/comments$") == 1 and h.gh.count("PATCH", r"/comments/") == 1


def test_guard_off_by_default_reads_no_diff_and_posts_nothing(h: Harness) -> None:
    open_code_pr(h, MONGO_CHANGE)
    r = h.run("pull_request", OPENED)
    assert r.code == 0, r.stdout
    assert h.gh.comments_on(2) == [] and "none of them an ADR" in r.stdout
    assert not any("vnd.github.diff" in str(hd.get("Accept")) for hd in h.gh.request_headers)


def test_the_check_command_runs_the_guard_on_demand(h: Harness) -> None:
    open_code_pr(h, MONGO_CHANGE)
    r = h.run(
        "issue_comment",
        "issue_comment__created.pr-command.json",
        edits={"comment.body": "/adr-review check", "comment.author_association": "MEMBER"},
    )
    assert r.code == 0, r.stdout
    [comment] = guard_comments(h)
    assert DECISION in str(comment["body"])
    assert (COMMAND_COMMENT_ID, "eyes") in h.gh.reactions


def test_a_diff_github_refuses_to_render_is_a_note_not_a_crash(h: Harness) -> None:
    open_code_pr(h, MONGO_CHANGE)
    h.gh.refuse_diff[2] = 406
    r = run(h)
    assert h.gh.comments_on(2) == []
    assert "::warning" in r.stdout and "would not send the diff of #2" in r.stdout
    assert "the guard did not run" in r.summary


def test_an_invalid_guard_input_is_a_config_error(h: Harness) -> None:
    open_code_pr(h, MONGO_CHANGE)
    r = h.run("pull_request", OPENED, inputs={"guard": "sometimes"})
    assert r.code == 1 and "guard.enabled" in r.stdout


# Reviewers' answers to the guard (as for findings: app/adr_review/pipeline/reporting/feedback.py)


def test_a_ticked_guard_box_and_a_dismiss_are_read_as_guard_answers_not_findings(h: Harness) -> None:
    from adr_review.adapters.state_sqlite import SqliteStateStore
    from adr_review.core.feedback_boxes import read_ticks
    from tests.fakes.boxes import click_box

    open_code_pr(h, MONGO_CHANGE)
    run(h)
    [comment] = guard_comments(h)
    [answer] = read_ticks(str(comment["body"]))  # the conflict's Adopted box, its id on the line
    assert f"id `{answer}`" in str(comment["body"])
    comment["body"] = click_box(str(comment["body"]), answer)
    body = f"/adr-review dismiss {answer} the store is being replaced anyway"
    r = h.run("issue_comment", "issue_comment__created.pr-command.json", edits={"comment.body": body})
    assert r.code == 0, r.stdout
    assert f"dismissed finding {answer}" in r.stdout and h.gh.reactions == [(COMMAND_COMMENT_ID, "+1")]
    # the scheduled run reads the box and the command into its store, and its report counts them apart
    h.gh._new_comment(2, body, login="Codertocat", user_type="User", association="OWNER")
    r = h.run("schedule", "schedule.json", fresh_runner=True)
    assert r.code == 0, r.stdout
    assert "1 review comment(s), 1 dismissal(s)" in r.stdout
    findings_part, guard_part = r.summary.split("### ADR guard answers (counted apart)")
    assert "not enough data — 0 findings shown" in findings_part  # the sunset rule sees no finding
    assert "| Adopted (box ticked) | 1 (100 %) |" in guard_part
    assert "| Dismissed (`/adr-review dismiss`) | 1 (100 %) |" in guard_part
    assert "ADR-0001: PostgreSQL as the primary data store" in guard_part
    with SqliteStateStore(h.tmp / "workspace" / ".adr-review" / "checkpoints.sqlite3") as store:
        _, outcomes = store.outcomes(None, 0, 2e9)
    assert [(o.finding_id, o.guard, o.adopted, o.dismissed_by) for o in outcomes] == [
        (answer, True, True, "Codertocat")
    ]


def test_a_push_with_the_same_verdict_in_other_words_keeps_the_answers_id_and_its_tick(h: Harness) -> None:
    from adr_review.core.feedback_boxes import read_ticks
    from tests.fakes.boxes import click_box

    open_code_pr(h, MONGO_CHANGE)
    run(h)
    [comment] = guard_comments(h)
    [answer] = read_ticks(str(comment["body"]))
    comment["body"] = click_box(str(comment["body"]), answer)
    # a new head that still moves the orders to MongoDB, and the model's conflict quoting another line
    head = "d" * 40
    open_code_pr(h, {**MONGO_CHANGE, BUTTON: BASE_CODE[BUTTON].replace("Save", "Store")}, head=head)
    h.llm.on(
        "guard-check",
        {**CHECK_ANSWER, "diff_quote": "MongoClient(url).orders", "reason": "Orders go to MongoDB."},
    )
    r = h.run("pull_request", OPENED, inputs=GUARD_ON, edits={"pull_request.head.sha": head})
    assert r.code == 0, r.stdout
    [comment] = guard_comments(h)
    assert "Orders go to MongoDB." in str(comment["body"])  # the new answer is the one shown
    assert read_ticks(str(comment["body"])) == {answer: True}
    assert h.gh.count("PATCH", r"/comments/") == 1 and h.llm.counts() == {"guard-check": 2}
