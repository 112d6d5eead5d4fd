"""The App's plan and review runs in-process, against the fake GitHub server (no model: offline mode)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.adapters.events import parse_event
from app.adapters.github import GitHubAdapter
from app.adapters.remote_folder import BlobCache, load_remote_folder
from app.adapters.state_sqlite import SqliteStateStore
from app.core.results import RetrievalResult
from app.core.triggers import HELP_TEXT
from app.pipeline.app_runs import AppDeps, AppExecutor
from app.pipeline.intake import delivery_record, intake
from app.pipeline.ports import SyncReport
from app.pipeline.worker import WorkerConfig, WorkerPool
from app.prompts import PROMPTS_DIR, PromptFiles
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
        parse_event=parse_event,
        prompts=PromptFiles(prompts),
    )
    pool = WorkerPool(store, AppExecutor(deps), WorkerConfig(retry_backoff_s=0), owner_prefix="t")
    yield {"queue": store, "store": store, "pool": pool, "prompts": prompts, "deps": deps}
    store.close()


def deliver(queue: SqliteStateStore, event: str, data: dict[str, Any], guid: str) -> tuple[str, ...]:
    result = intake(event, data)
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
    assert forced.run_key in comment["body"].splitlines()[0]


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


def test_a_newer_head_cancels_the_queued_review_of_the_older_one(
    env: dict[str, Any], gh: FakeGitHubServer
) -> None:
    queue = env["queue"]
    deliver(queue, "pull_request", pr_payload(), "g1")
    assert env["pool"].run_once("t:w0")  # the plan only: its review stays queued
    newer = "e" * 40
    files = dict(repo_seed()["repos"][REPO]["refs"][HEAD])
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
    """The plan run calls app.pipeline.pr.plan and each review run pr.run_target: the functions the
    Action calls inline (tests/entrypoints/test_action.py::test_the_action_runs_the_shared_pr_use_case)."""
    from app.pipeline import pr

    seen: list[str] = []
    real_plan, real_run = pr.plan, pr.run_target

    def plan(*a: Any, **kw: Any) -> Any:
        seen.append("plan")
        return real_plan(*a, **kw)

    def run_target(*a: Any, **kw: Any) -> Any:
        seen.append("run_target")
        return real_run(*a, **kw)

    monkeypatch.setattr(pr, "plan", plan)
    monkeypatch.setattr(pr, "run_target", run_target)
    deliver(env["queue"], "pull_request", pr_payload(), "g1")
    drain(env["pool"])
    assert seen == ["plan", "run_target"] and len(gh.comments_on(REPO, PR)) == 1
