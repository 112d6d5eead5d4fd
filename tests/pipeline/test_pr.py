"""The one pull-request use case (app/pipeline/pr.py) over the GitHubPort in memory: what `plan` decides
for each kind of event, and what `run_target` publishes. The Action and the App both run these
functions (tests/entrypoints/test_action.py and tests/server/test_app_runs.py show each reaching them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.adapters.remote_folder import BlobCache, load_remote_folder
from app.adapters.state_sqlite import SqliteStateStore
from app.config import RepoConfig, RepoConfigError
from app.core.results import RetrievalResult
from app.core.triggers import Actor, ChangedFile, CommentEvent, Event, OtherEvent, PullRequestEvent
from app.pipeline import pr
from app.pipeline.folders import FolderCache
from app.pipeline.inline import run_inline
from app.pipeline.ports import GitHubError, PullRequestInfo, SyncReport
from tests.fakes.github_port import MemoryGitHub

ROOT = Path(__file__).resolve().parents[2]
REPO, HEAD, BASE, N = "acme/shop", "h" * 40, "b" * 40, 7
KAFKA = "docs/adr/0008-adopt-kafka-for-order-events.md"
REDIS = "docs/adr/0009-session-store-redis.md"
ALICE, MALLORY = Actor("alice", "User"), Actor("mallory", "User")


def github(*, changed: tuple[str, ...] = (KAFKA,), config: bytes | None = None) -> MemoryGitHub:
    gh = MemoryGitHub(REPO)
    base = {f"docs/adr/{p.name}": p.read_bytes() for p in sorted((ROOT / "examples/adr").glob("*.md"))}
    base["docs/adr/README.md"] = b"# Our ADRs\n"
    head = dict(base)
    for path in changed:
        proposal = ROOT / "examples/proposals" / Path(path).name
        head[path] = proposal.read_bytes() if proposal.is_file() else b"# not an ADR\n"
    gh.files = {BASE: base, HEAD: head, "main": dict(base)}
    if config is not None:
        gh.files["main"][".github/adr-review.yml"] = config
    gh.pulls[N] = PullRequestInfo(REPO, N, HEAD, BASE, "main", REPO, False, "open")
    gh.changes[N] = [ChangedFile(p, "added") for p in changed]
    gh.permissions = {"alice": "write"}
    return gh


def pr_event(**kw: Any) -> PullRequestEvent:
    fields: dict[str, Any] = dict(
        event_name="pull_request", action="opened", repo=REPO, number=N, draft=False, head_sha=HEAD,
        base_sha=BASE, base_ref="main", head_repo=REPO, sender=ALICE, default_branch="main",
    )  # fmt: skip
    fields.update(kw)
    return PullRequestEvent(**fields)


def command(body: str, *, sender: Actor = ALICE, association: str = "MEMBER") -> CommentEvent:
    return CommentEvent(
        action="created", repo=REPO, number=N, on_pull_request=True, comment_id=555, body=body,
        author_association=association, sender=sender, default_branch="main",
    )  # fmt: skip


def plan(event: Event, gh: MemoryGitHub, **kw: Any) -> pr.Plan:
    return pr.plan(pr.PrContext(event, REPO, prompt_hash="p1", online=kw.pop("online", True), **kw), gh)


# --- plan: one decision per kind of event --------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "kind", "in_summary"),
    [
        (OtherEvent("push", None), "ignore", "not handled"),
        (pr_event(sender=Actor("dependabot[bot]", "Bot")), "ignore", "is a bot"),
        (pr_event(action="closed"), "ignore", "not reviewed"),
        (pr_event(draft=True), "ignore", "draft"),
        (pr_event(head_sha="n" * 40), "superseded", "head moved"),
        (command("/adr-review", sender=MALLORY, association="NONE"), "deny", ""),
        (command("/adr-review help"), "help", ""),
        (command("/adr-review"), "review", ""),
        (pr_event(), "review", ""),
    ],
)
def test_plan_decides_once_for_every_entrypoint(event: Event, kind: str, in_summary: str) -> None:
    p = plan(event, github())
    assert p.kind == kind
    assert in_summary in p.summary
    assert bool(p.targets) == (kind == "review")


def test_a_review_plan_has_one_keyed_target_per_changed_adr_and_skips_non_adrs() -> None:
    gh = github(changed=(KAFKA, REDIS, "docs/adr/README.md", "src/main.py"))
    p = plan(pr_event(), gh)
    assert [t.adr_path for t in p.targets] == [KAFKA, REDIS]
    assert len({t.run_key for t in p.targets}) == 2
    assert all(t.head_sha == HEAD and t.base_sha == BASE and t.nonce is None for t in p.targets)
    again = plan(pr_event(), gh)
    assert [t.run_key for t in again.targets] == [t.run_key for t in p.targets]  # same inputs, same keys
    offline = plan(pr_event(), gh, online=False)
    assert {t.run_key for t in offline.targets}.isdisjoint(t.run_key for t in p.targets)


def test_a_command_forces_new_keys_narrows_stages_and_is_acknowledged() -> None:
    gh = github()
    plain = plan(pr_event(), gh)
    p = plan(command("/adr-review recall"), gh)
    assert p.kind == "review" and p.react_comment_id == 555
    (t,) = p.targets
    assert t.nonce == "comment-555" and t.stages == frozenset({"recall"})
    assert t.run_key != plain.targets[0].run_key
    pr.respond(p, gh, REPO)
    assert gh.reactions == [(555, "eyes")]


def test_a_stranger_gets_one_reply_and_no_review() -> None:
    gh = github()
    p = plan(command("/adr-review", sender=MALLORY, association="NONE"), gh)
    assert p.kind == "deny" and p.reply and not p.targets
    pr.respond(p, gh, REPO)
    assert [c.body for c in gh.comments[N]] == [p.reply]


def test_an_invalid_repo_config_is_reported_never_replaced_by_the_defaults() -> None:
    gh = github(config=b"adr_paths: 12\n")
    p = plan(pr_event(), gh)
    assert p.kind == "config_error" and not p.targets
    assert p.config_error and ".github/adr-review.yml (on main)" in p.config_error
    assert "adr_paths: Input should be a valid list" in p.config_error
    body = pr.config_error_comment(p, ".github/adr-review.yml")
    assert body.startswith("<!-- adr-review:v1 path=.github/adr-review.yml key=config-error -->")
    # An event that needs no config (help) still gets its answer.
    assert plan(command("/adr-review help"), gh).kind == "help"


def test_the_entrypoints_own_settings_go_through_the_same_strict_reader() -> None:
    def bad_input(config: RepoConfig) -> RepoConfig:
        raise RepoConfigError("input language", ["'xx' is not one of auto, en, ja"])

    p = plan(pr_event(), github(), adjust=bad_input)
    assert p.kind == "config_error" and "input language" in (p.config_error or "")


def test_a_deleted_adr_is_listed_as_missing_not_reviewed() -> None:
    gh = github()
    del gh.files[HEAD][KAFKA]
    p = plan(pr_event(), gh)
    assert p.kind == "review" and p.targets == () and p.missing == (KAFKA,)


def test_plans_and_targets_round_trip_through_json() -> None:
    p = plan(command("/adr-review blind-spots"), github())
    back = pr.Plan.from_json(p.to_json())
    assert back == p and back.targets[0].content is None  # content is re-read, never stored


# --- run_target ----------------------------------------------------------------------------------------


class NoIndex:
    def sync(self, adrs: Any) -> SyncReport:
        return SyncReport(0, 0, 0, len(adrs), (), 0.0, "none")

    def search(self, query: str, **kw: Any) -> RetrievalResult:
        raise RuntimeError("no index in this test")


def deps(gh: MemoryGitHub, **kw: Any) -> pr.RunDeps:
    cache = BlobCache()
    folders = FolderCache(lambda g, r, ref, d: load_remote_folder(g, r, ref, d, cache), lambda *_: NoIndex())
    return pr.RunDeps(gh, None, folders, "https://github.com", **kw)


def test_run_target_publishes_one_comment_and_then_leaves_it_alone() -> None:
    gh = github()
    (t,) = plan(pr_event(), gh, online=False).targets
    first = pr.run_target(t, deps(gh))
    assert first.result == "created" and first.review is not None and first.review.error is None
    (comment,) = gh.comments[N]
    assert comment.marker_path == KAFKA and comment.marker_key == t.run_key
    assert "https://github.com/acme/shop/blob/" + BASE in comment.body or "search" in comment.body
    gh.calls.clear()
    again = pr.run_target(t, deps(gh))
    assert again.result == "unchanged" and again.url == comment.html_url
    assert gh.calls == ["find_comment"]  # nothing read, nothing reviewed, nothing written


def test_a_new_key_edits_the_same_comment() -> None:
    gh = github()
    (t,) = plan(pr_event(), gh, online=False).targets
    pr.run_target(t, deps(gh))
    (forced,) = plan(command("/adr-review"), gh, online=False).targets
    out = pr.run_target(forced, deps(gh))
    assert out.result == "edited" and len(gh.comments[N]) == 1
    assert gh.comments[N][0].marker_key == forced.run_key


def test_without_write_access_the_comment_is_rendered_not_posted() -> None:
    gh = github()
    (t,) = plan(pr_event(), gh, online=False).targets
    out = pr.run_target(t, deps(gh, writes=False))
    assert out.result == "not-posted" and out.body.startswith(f"<!-- adr-review:v1 path={KAFKA}")
    assert "upsert_comment" not in gh.calls and "find_comment" not in gh.calls


def test_a_run_that_is_no_longer_current_publishes_nothing() -> None:
    class Superseded(Exception):
        pass

    def check() -> None:
        raise Superseded

    gh = github()
    (t,) = plan(pr_event(), gh, online=False).targets
    with pytest.raises(Superseded):
        pr.run_target(t, deps(gh, still_current=check))
    assert N not in gh.comments


def test_content_that_changed_under_its_key_is_refused() -> None:
    gh = github()
    (t,) = plan(pr_event(), gh, online=False).targets
    stored = pr.Target.from_json(t.to_json())  # as the App stores it: without the bytes
    gh.files[HEAD][KAFKA] = b"# something else"
    with pytest.raises(pr.RunInputError):
        pr.run_target(stored, deps(gh))


def test_one_adr_failing_never_stops_the_others() -> None:
    gh = github(changed=(KAFKA, REDIS))
    gh.files[HEAD][KAFKA] = b"\x00\x01 binary, not an ADR"
    p = plan(pr_event(), gh, online=False)
    store = SqliteStateStore(":memory:")
    outs = run_inline(p.targets, deps(gh), store)
    assert [o.result for o in outs] == ["created", "created"]
    assert outs[0].review is not None and outs[0].review.error  # an error comment says why
    assert outs[1].review is not None and outs[1].review.error is None
    states = [store.get_run(t.run_key).state for t in p.targets]  # type: ignore[union-attr]
    assert states == ["failed", "completed"]


def test_a_github_failure_of_one_adr_is_reported_and_the_rest_go_on() -> None:
    gh = github(changed=(KAFKA, REDIS))
    p = plan(pr_event(), gh, online=False)
    failures: list[str] = []
    real = gh.upsert_comment

    def flaky(repo: str, number: int, path: str, body: str) -> Any:
        if path == KAFKA:
            raise GitHubError("comment", "secondary rate limit", 403)
        return real(repo, number, path, body)

    gh.upsert_comment = flaky  # type: ignore[method-assign]
    outs = run_inline(
        p.targets, deps(gh), SqliteStateStore(":memory:"), on_failed=lambda t, e: failures.append(t.adr_path)
    )
    assert [o.result for o in outs] == ["failed", "created"] and failures == [KAFKA]
