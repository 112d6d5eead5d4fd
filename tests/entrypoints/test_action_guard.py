"""The ADR guard through `adr-review action`: the real PyGithub adapter against the in-memory GitHub
(tests/fakes/github_api.py, which renders a PR's diff from its trees), the production index, the
runner's file commands. Guard off (the default) is every test of test_action.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import responses

from adr_review.core.comments import GUARD_MARKER_PATH
from adr_review.core.marker import read_marker, without_marker
from tests.entrypoints.guard_case import (
    ADDED_LINE,
    ADR_FILES,
    BASE_CODE,
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


def open_code_pr(h: Harness, changes: dict[str, str], head: str = HEAD, title: str = TITLE) -> None:
    pull = h.gh.add_pull(2, head=head, base=BASE, changes={p: t.encode() for p, t in changes.items()})
    pull.title = title


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
    text = without_marker(str(comment["body"]))
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
