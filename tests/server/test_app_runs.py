"""The App's plan and review runs in-process, against the fake GitHub server (no model: offline mode)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adr_review.adapters.github import GitHubAdapter
from adr_review.adapters.remote_folder import BlobCache, load_remote_folder
from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.core.results import RetrievalResult
from adr_review.core.triggers import HELP_TEXT
from adr_review.pipeline.ports import SyncReport
from adr_review.pipeline.server.app_runs import AppDeps, AppExecutor
from adr_review.pipeline.server.intake import delivery_record, intake
from adr_review.pipeline.server.worker import WorkerConfig, WorkerPool
from adr_review.prompts import PROMPTS_DIR, PromptFiles
from tests.fakes.github_server import FakeGitHubServer
from tests.server.conftest import payload
from tests.server.harness import ADR_PATH, BASE, HEAD, INSTALLATION, PR, REPO, pr_payload, repo_seed


class NoIndex:
    """Recall's retrieval fails (and says so); these tests are about planning and publishing."""

    def sync(self, adrs: Any) -> SyncReport:
        return SyncReport(0, 0, 0, 0, (), 0.0, "none")

    def search(self, query: str, **kw: Any) -> RetrievalResult:
        raise RuntimeError("no index in this test")


@pytest.fixture
def gh() -> Iterator[FakeGitHubServer]:
    with FakeGitHubServer() as server:
        server.seed(repo_seed())
        yield server


@pytest.fixture
def env(tmp_path: Path, gh: FakeGitHubServer) -> Iterator[dict[str, Any]]:
    store = SqliteStateStore(tmp_path / "app.sqlite3")
    adapter = GitHubAdapter("t", base_url=gh.base_url, seconds_between_writes=None)
    cache = BlobCache()
    prompts = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, prompts)
    deps = AppDeps(
        store=store,
        github_for=lambda _inst, _repo, _delivery: adapter,
        llm_for=lambda _config: None,
        open_index=lambda *_: NoIndex(),
        load_folder=lambda g, repo, ref, d: load_remote_folder(g, repo, ref, d, cache),
        prompts=PromptFiles(prompts),
    )
    pool = WorkerPool(store, AppExecutor(deps), WorkerConfig(retry_backoff_s=0), owner_prefix="t")
    yield {"queue": store, "store": store, "pool": pool, "prompts": prompts, "deps": deps}
    store.close()


def deliver(queue: SqliteStateStore, event: str, data: dict[str, Any], guid: str) -> tuple[str, ...]:
    result = intake(event, data, delivery_id=guid)  # as the webhook passes X-GitHub-Delivery
    assert result.ignored is None, result.ignored
    body = json.dumps(data).encode()
    return queue.accept_delivery(delivery_record("1", guid, event, body, result), result.runs).run_keys


def drain(pool: WorkerPool) -> None:
    while pool.run_once("t:w0"):
        pass
    failed = [(i.run_key, i.error) for i in pool.store.items() if i.state == "failed"]
    assert not failed, failed


def states(queue: SqliteStateStore) -> dict[tuple[str, str, str], str]:
    return {(i.kind, i.adr_path, i.head_sha[:4]): i.state for i in queue.items()}


def comment_payload(body: str, association: str = "OWNER", login: str = "alice") -> dict[str, Any]:
    data = payload("issue_comment__created.payload.json")
    data["issue"]["number"] = PR
    data["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{PR}"}
    data["comment"].update(body=body, author_association=association, id=555)
    data["comment"]["user"] = {"login": login, "id": 9, "type": "User"}
    data["sender"] = {"login": login, "id": 9, "type": "User"}
    data["repository"]["full_name"] = REPO
    data["repository"]["default_branch"] = "main"
    data["installation"] = {"id": INSTALLATION}
    return data


def test_pull_request_plans_one_review_per_changed_adr_and_publishes_once(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    deliver(env["queue"], "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    assert states(env["queue"]) == {
        ("plan", "", HEAD[:4]): "completed",
        ("review", ADR_PATH, HEAD[:4]): "completed",
    }
    [comment] = gh.comments_on(REPO, PR)
    assert comment["body"].startswith(f"<!-- adr-review:v1 path={ADR_PATH}")
    assert "the search of past ADRs failed" in comment["body"]  # degraded, and says so


def test_command_reacts_and_forces_a_new_run_that_edits_the_same_comment(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    deliver(env["queue"], "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    deliver(env["queue"], "issue_comment", comment_payload("/adr-review recall"), "g2")
    drain(env["pool"])
    reviews = [i for i in env["queue"].items() if i.kind == "review"]
    assert len(reviews) == 2 and {r.state for r in reviews} == {"completed"}
    forced = next(r for r in reviews if r.spec["target"].get("nonce"))
    assert forced.spec["target"]["nonce"] == "comment-555" and forced.spec["target"]["stages"] == ["recall"]
    assert [r["content"] for r in gh.reactions] == ["eyes"] and gh.reactions[0]["comment_id"] == 555
    assert gh.counters["comments_created"] == 1 and gh.counters["comments_edited"] == 1
    [comment] = gh.comments_on(REPO, PR)
    assert forced.spec["target"]["run_key"] in comment["body"].splitlines()[0]  # the marker: its content key


def test_help_command_replies_once_and_reviews_nothing(env: dict[str, Any], gh: FakeGitHubServer) -> None:
    deliver(env["queue"], "issue_comment", comment_payload("/adr-review help"), "g1")
    drain(env["pool"])
    [reply] = gh.comments_on(REPO, PR)
    assert reply["body"] == HELP_TEXT
    assert [i.kind for i in env["queue"].items()] == ["plan"]


@pytest.mark.parametrize(
    ("association", "permission", "reviewed"),
    [("NONE", "read", False), ("CONTRIBUTOR", "write", True), ("MEMBER", None, True)],
)
def test_command_permissions(
    env: dict[str, Any], gh: FakeGitHubServer, association: str, permission: str | None, reviewed: bool
) -> None:
    if permission:
        gh.seed({"repos": {REPO: {"permissions": {"mallory": permission}}}})
    deliver(env["queue"], "issue_comment", comment_payload("/adr-review", association, "mallory"), "g1")
    drain(env["pool"])
    kinds = sorted(i.kind for i in env["queue"].items())
    assert kinds == (["plan", "review"] if reviewed else ["plan"])
    if not reviewed:
        [reply] = gh.comments_on(REPO, PR)
        assert "only repository owners, members and collaborators" in reply["body"]


def test_a_plan_for_an_old_head_is_superseded_and_cancels_nothing_new(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    old = "d" * 40
    deliver(env["queue"], "pull_request", pr_payload(head=old), "g-old")  # the PR has moved on to HEAD
    drain(env["pool"])
    [plan] = env["queue"].items()
    assert plan.state == "completed"
    assert env["store"].get(plan.run_key, "plan")["kind"] == "superseded"
    assert gh.comments_on(REPO, PR) == []


def push(gh: FakeGitHubServer, newer: str, *, edit: bytes | None = None) -> None:
    """A new head of the PR; `edit` replaces the ADR's content there (None: the ADR is unchanged)."""
    files = dict(repo_seed()["repos"][REPO]["refs"][HEAD])
    if edit is not None:
        files[ADR_PATH] = edit.decode()
    gh.seed(
        {
            "repos": {
                REPO: {
                    "refs": {newer: files},
                    "pulls": {str(PR): dict(repo_seed()["repos"][REPO]["pulls"][str(PR)], head_sha=newer)},
                }
            }
        }
    )


def test_a_push_that_leaves_the_adr_alone_publishes_once_under_the_same_content_key(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    queue = env["queue"]
    deliver(queue, "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    [first] = gh.comments_on(REPO, PR)
    newer = "e" * 40
    push(gh, newer)
    deliver(queue, "pull_request", pr_payload(head=newer, action="synchronize"), "g2")
    drain(env["pool"])
    [again] = gh.comments_on(REPO, PR)
    # Same inputs, same content key: the newer head's review finds its key in the marker, edits nothing.
    assert again["body"] == first["body"] and gh.counters.get("comments_edited", 0) == 0


def test_a_revert_to_earlier_content_is_reviewed_again(env: dict[str, Any], gh: FakeGitHubServer) -> None:
    queue = env["queue"]
    deliver(queue, "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    original = gh.comments_on(REPO, PR)[0]["body"].splitlines()[0]
    content = repo_seed()["repos"][REPO]["refs"][HEAD][ADR_PATH]
    push(gh, "e" * 40, edit=(content + "\nOne more consequence.\n").encode())
    deliver(queue, "pull_request", pr_payload(head="e" * 40, action="synchronize"), "g2")
    drain(env["pool"])
    push(gh, "f" * 40)  # back to the first content
    deliver(queue, "pull_request", pr_payload(head="f" * 40, action="synchronize"), "g3")
    drain(env["pool"])
    [comment] = gh.comments_on(REPO, PR)
    key_of = lambda line: line.split(" key=")[1].split()[0]  # noqa: E731
    assert key_of(comment["body"].splitlines()[0]) == key_of(original)  # the first content's review again


def test_a_newer_head_cancels_the_queued_review_of_the_older_one(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    queue = env["queue"]
    deliver(queue, "pull_request", pr_payload(), "g1")
    assert env["pool"].run_once("t:w0")  # the plan only: its review stays queued
    newer = "e" * 40
    content = repo_seed()["repos"][REPO]["refs"][HEAD][ADR_PATH]
    push(gh, newer, edit=(content + "\nOne more consequence.\n").encode())
    deliver(queue, "pull_request", pr_payload(head=newer, action="synchronize"), "g2")
    drain(env["pool"])
    assert states(queue) == {
        ("plan", "", HEAD[:4]): "completed",
        ("review", ADR_PATH, HEAD[:4]): "cancelled",
        ("plan", "", newer[:4]): "completed",
        ("review", ADR_PATH, newer[:4]): "completed",
    }
    old_review = next(i for i in queue.items() if i.kind == "review" and i.head_sha == HEAD)
    assert old_review.cancel_reason == f"superseded by {newer[:12]}"
    assert gh.counters["comments_created"] == 1


def test_changed_prompts_rekey_a_queued_review_instead_of_failing_it(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    queue = env["queue"]
    deliver(queue, "pull_request", pr_payload(), "g1")
    assert env["pool"].run_once("t:w0")  # the plan keys the review under the current prompts
    judge = env["prompts"] / "blindspot-judge" / "prompt.md"
    judge.write_text(judge.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # a deploy changed them
    env["deps"].prompts = PromptFiles(env["prompts"])  # ... and restarted the worker: loaded anew
    drain(env["pool"])
    reviews = {i.run_key: i for i in queue.items() if i.kind == "review"}
    assert sorted(i.state for i in reviews.values()) == ["cancelled", "completed"]
    old = next(i for i in reviews.values() if i.state == "cancelled")
    new = next(i for i in reviews.values() if i.state == "completed")
    assert new.parent_key == old.run_key and (old.cancel_reason or "").startswith(f"rekeyed as {new.run_key}")
    assert gh.counters["comments_created"] == 1


@pytest.mark.parametrize(
    ("config", "reviewed", "config_error"),
    [("review_drafts: true\n", True, False), ("review_drafts: [oops\n", False, True), ("", False, False)],
)
def test_drafts_follow_the_default_branch_config(
    env: dict[str, Any], gh: FakeGitHubServer, config: str, reviewed: bool, config_error: bool
) -> None:
    if config:
        gh.seed({"repos": {REPO: {"refs": {"main": {".github/adr-review.yml": config}}}}})
    data = pr_payload()
    data["pull_request"]["draft"] = True
    [key] = deliver(env["queue"], "pull_request", data, "g1")
    drain(env["pool"])
    plan = env["store"].get(key, "plan")
    assert (plan["kind"] == "review") is reviewed
    assert (plan["kind"] == "config_error") is config_error
    comments = gh.comments_on(REPO, PR)
    if config_error:  # said where the user looks, never replaced by the defaults in silence
        [comment] = comments
        assert "could not read its configuration" in comment["body"]
    else:
        assert bool(comments) is reviewed


def test_base_is_read_from_the_pr_not_the_payload(env: dict[str, Any]) -> None:
    deliver(env["queue"], "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    [review] = [i for i in env["queue"].items() if i.kind == "review"]
    assert review.spec["target"]["base_sha"] == BASE


def test_the_app_runs_the_shared_pr_use_case(
    env: dict[str, Any], gh: FakeGitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan run calls adr_review.pipeline.plans.pr.plan and each review run pr.run_target: the functions the
    Action calls inline (tests/entrypoints/test_action.py::test_the_action_runs_the_shared_pr_use_case)."""
    from tests.fakes.spies import record_pr_calls

    seen = record_pr_calls(monkeypatch)
    deliver(env["queue"], "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    assert seen == ["plan", "run_target"] and len(gh.comments_on(REPO, PR)) == 1


def test_the_screen_runs_once_per_delivery(
    env: dict[str, Any], gh: FakeGitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The webhook's intake screens the delivery; the plan run reads it with the same field map and
    trusts that screen (PrContext.screened), so neither it nor `decide` screens again."""
    from tests.fakes.spies import record_screens

    screens = record_screens(monkeypatch)
    deliver(env["queue"], "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    assert screens == ["PullRequestEvent"] and len(gh.comments_on(REPO, PR)) == 1


# --- races (issue 16) ---------------------------------------------------------------------------------


def test_a_plan_resumed_after_a_crash_does_not_cancel_the_newer_head(
    env: dict[str, Any], gh: FakeGitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan of head X is checkpointed, then its worker dies before enqueueing; a push of Y arrives;
    the resumed plan of X (plans go first, oldest first) used to enqueue X's review and cancel every run
    of the PR at another head, Y's plan included: the PR showed X's review and Y was never reviewed."""
    queue = env["queue"]
    real_enqueue, crashed = queue.enqueue, []

    def crash_once(runs: Any) -> int:
        if not crashed:
            crashed.append(True)
            raise RuntimeError("worker died after the plan checkpoint")
        return real_enqueue(runs)

    monkeypatch.setattr(queue, "enqueue", crash_once)
    deliver(queue, "pull_request", pr_payload(), "g-x")
    assert env["pool"].run_once("t:w0")  # plan X: checkpointed, then the "crash" (retried at once)
    newer = "e" * 40
    content = repo_seed()["repos"][REPO]["refs"][HEAD][ADR_PATH]
    push(gh, newer, edit=(content + "\nOne more consequence.\n").encode())
    deliver(queue, "pull_request", pr_payload(head=newer, action="synchronize"), "g-y")
    drain(env["pool"])
    got = states(queue)
    assert got[("plan", "", newer[:4])] == "completed"
    assert got[("review", ADR_PATH, newer[:4])] == "completed"
    assert ("review", ADR_PATH, HEAD[:4]) not in got  # the stale plan enqueued nothing
    [comment] = gh.comments_on(REPO, PR)
    assert f" head={newer} " in comment["body"].splitlines()[0]


def test_a_review_finding_a_newer_heads_comment_is_cancelled_and_leaves_it(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    """A review of an older head that is still queued when a newer head's review is already published
    (the newer plan ran after it was enqueued but before it was cancelled) never overwrites it."""
    queue = env["queue"]
    deliver(queue, "pull_request", pr_payload(), "g-x")
    assert env["pool"].run_once("t:w0")  # plan X: X's review queued
    [stale] = [i for i in queue.items() if i.kind == "review"]
    newer = "e" * 40
    content = repo_seed()["repos"][REPO]["refs"][HEAD][ADR_PATH]
    push(gh, newer, edit=(content + "\nOne more consequence.\n").encode())
    deliver(queue, "pull_request", pr_payload(head=newer, action="synchronize"), "g-y")
    queue.cancel_superseded = lambda *a, **k: []  # type: ignore[method-assign]  (the window)
    assert queue.claim(stale.run_key, "a-worker-that-dies", 0.5)  # X's review: taken, not finished
    drain(env["pool"])  # Y's plan and review: Y's comment
    time.sleep(0.6)
    drain(env["pool"])  # X's review, reclaimed, finds Y's comment
    assert queue.state(stale.run_key) == "cancelled"
    assert "pushed after" in (queue.item(stale.run_key).cancel_reason or "")  # type: ignore[union-attr]
    [comment] = gh.comments_on(REPO, PR)
    assert f" head={newer} " in comment["body"].splitlines()[0]
    assert gh.counters["comments_created"] == 1 and gh.counters.get("comments_edited", 0) == 0


def test_a_comment_by_another_bot_with_our_marker_is_left_alone(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    forged = f"<!-- adr-review:v1 path={ADR_PATH} key=rk2-forged -->\nI am not adr-review"
    gh.add_comment(REPO, PR, forged, "copycat[bot]")
    deliver(env["queue"], "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    bodies = [c["body"] for c in gh.comments_on(REPO, PR)]
    assert bodies[0] == forged and len(bodies) == 2  # ours is our own comment, theirs untouched
    assert gh.counters.get("comments_edited", 0) == 0


def edit_payload(before: str, after: str, comment_id: int, login: str) -> dict[str, Any]:
    """An `issue_comment.edited` delivery (the recorded payload's shape) for an edit of our comment."""
    data = comment_payload(after, "NONE", login)
    data.update(action="edited", changes={"body": {"from": before}})
    data["comment"].update(id=comment_id, user={"login": "adr-review[bot]", "id": 1, "type": "Bot"})
    return data


def test_the_app_records_adopted_boxes_from_edits_by_write_access_only(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    from adr_review.core.feedback_boxes import read_ticks
    from tests.fakes.blindspot_answers import da_answer, judge_echo_answer, pm_answer
    from tests.fakes.boxes import click_box
    from tests.fakes.llm import FakeLlm

    fake = FakeLlm()
    fake.on("recall-pre-gate", {"citations": []})
    quote = "We will store every webhook delivery"
    fake.on("blindspot-devils-advocate", da_answer(quote=quote))
    fake.on("blindspot-premortem", pm_answer(("technical",), quote=quote))
    fake.on(
        "blindspot-adjacent-domain", {"abstracted_decision": "x", "knowledge_basis": "x", "analogies": []}
    )
    fake.on("blindspot-judge", lambda req: judge_echo_answer(req.user))
    env["deps"].llm_for = lambda _config: fake
    deliver(env["queue"], "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    [comment] = gh.comments_on(REPO, PR)
    ids = list(read_ticks(comment["body"]))
    assert len(ids) >= 2, comment["body"]
    before = comment["body"]
    after = click_box(before, ids[0])
    comment["body"] = after  # what GitHub holds after the click
    deliver(env["queue"], "issue_comment", edit_payload(before, after, comment["id"], "alice"), "g2")
    stranger = click_box(after, ids[1])
    deliver(env["queue"], "issue_comment", edit_payload(after, stranger, comment["id"], "mallory"), "g3")
    drain(env["pool"])
    _, findings = env["store"].outcomes(REPO, 0, 2e9)
    assert [(f.finding_id, f.adopted_by) for f in findings if f.adopted] == [(ids[0], "alice")]
    plans = [i for i in env["queue"].items() if i.kind == "plan"]
    assert len(plans) == 3 and {i.state for i in plans} == {"completed"}
