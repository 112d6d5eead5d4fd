"""The one pull-request use case (app/adr_review/pipeline/plans/pr.py) over the GitHubPort in memory: what `plan` decides
for each kind of event, and what `run_target` publishes. The Action and the App both run these
functions (tests/entrypoints/test_action.py and tests/server/test_app_runs.py show each reaching them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adr_review.adapters.remote_folder import BlobCache, load_remote_folder
from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.config import RepoConfig, RepoConfigError
from adr_review.core.results import INTERNAL_ERROR, RetrievalResult
from adr_review.core.triggers import Actor, ChangedFile, CommentEvent, Event, OtherEvent, PullRequestEvent
from adr_review.pipeline.plans import pr
from adr_review.pipeline.plans.carry_out import respond
from adr_review.pipeline.plans.folders import FolderCache
from adr_review.pipeline.plans.inline import run_inline
from adr_review.pipeline.ports import GitHubError, InfrastructureError, PullRequestInfo, SyncReport
from adr_review.prompts import packaged
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


@pytest.mark.parametrize("screened", [False, True])
def test_a_plan_screens_its_event_once_or_not_at_all_when_the_ack_did(
    screened: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Action's plan screens once (a permission check decides twice, never screens twice); the
    App's plan run trusts the webhook's screen of the same reading."""
    from tests.fakes.spies import record_screens

    screens = record_screens(monkeypatch)
    gh = github()
    p = plan(command("/adr-review", association="CONTRIBUTOR"), gh, screened=screened)
    assert p.kind == "review" and "permission" in gh.calls  # decided before and after the lookup
    assert screens == ([] if screened else ["CommentEvent"])


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
    respond(p, gh, REPO)
    assert gh.reactions == [(555, "eyes")]


def test_a_stranger_gets_one_reply_and_no_review() -> None:
    gh = github()
    p = plan(command("/adr-review", sender=MALLORY, association="NONE"), gh)
    assert p.kind == "deny" and p.reply and not p.targets
    respond(p, gh, REPO)
    [reply] = gh.comments[N]
    assert reply.body.endswith("\n" + p.reply) and reply.body.startswith("<!-- adr-review:v1 path=")
    assert gh.reactions == [(555, "confused")]


def test_a_stranger_repeating_a_command_gets_a_reaction_and_no_second_reply() -> None:
    """Anyone can comment: every denied `/adr-review` used to post a new "Sorry @..." (issue 16)."""
    gh = github()
    for _ in range(3):
        respond(plan(command("/adr-review", sender=MALLORY, association="NONE"), gh), gh, REPO)
    assert len(gh.comments[N]) == 1 and gh.reactions == [(555, "confused")] * 3
    eve = Actor("eve", "User")
    respond(plan(command("/adr-review recall", sender=eve, association="NONE"), gh), gh, REPO)
    assert [c.body.count("@eve") for c in gh.comments[N]] == [0, 1]  # one explanation per user
    gh.add_comment(N, gh.comments[N][0].body, author="copycat")  # a pasted copy is not ours
    respond(plan(command("/adr-review", sender=MALLORY, association="NONE"), gh), gh, REPO)
    assert len(gh.comments[N]) == 3


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
    kw.setdefault("prompts", packaged())
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
    assert {"create_comment", "edit_comment", "find_comment"}.isdisjoint(gh.calls)  # no write, no lookup


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


def test_a_crash_in_a_review_is_an_error_comment_without_the_exception(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("KeyError at /srv/app/secret.py line 12")

    monkeypatch.setattr(pr, "review_adr", crash)
    gh = github(changed=(KAFKA,))
    [target] = plan(pr_event(), gh, online=False).targets
    out = pr.run_target(target, deps(gh))
    assert out.review is not None and out.review.error == INTERNAL_ERROR
    [comment] = gh.comments[N]
    body = comment.body
    assert "secret.py" not in body and "RuntimeError" not in body
    assert f"(run {target.run_key[:12]})" in body
    assert "secret.py" in caplog.text  # the details are in the log


def test_a_store_outage_in_a_review_propagates_and_publishes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def down(*args: object, **kwargs: object) -> None:
        raise InfrastructureError("state store: OperationalError: the database system is shutting down")

    monkeypatch.setattr(pr, "review_adr", down)
    gh = github(changed=(KAFKA,))
    [target] = plan(pr_event(), gh, online=False).targets
    with pytest.raises(InfrastructureError):
        pr.run_target(target, deps(gh))
    assert N not in gh.comments


def test_a_github_failure_of_one_adr_is_reported_and_the_rest_go_on() -> None:
    gh = github(changed=(KAFKA, REDIS))
    p = plan(pr_event(), gh, online=False)
    failures: list[str] = []
    real = gh.create_comment

    def flaky(repo: str, number: int, body: str) -> Any:
        if body.splitlines()[0].startswith(f"<!-- adr-review:v1 path={KAFKA} "):
            raise GitHubError("comment", "secondary rate limit", 403)
        return real(repo, number, body)

    gh.create_comment = flaky  # type: ignore[method-assign]
    outs = run_inline(
        p.targets, deps(gh), SqliteStateStore(":memory:"), on_failed=lambda t, e: failures.append(t.adr_path)
    )
    assert [o.result for o in outs] == ["failed", "created"] and failures == [KAFKA]


# --- caps a team sets -----------------------------------------------------------------------------------


def limited(**limits: Any) -> bytes:
    import yaml

    return yaml.safe_dump({"limits": limits}).encode()


def test_at_most_n_adrs_per_run_and_the_rest_are_listed_with_their_command() -> None:
    gh = github(changed=(KAFKA, REDIS), config=limited(max_adrs_per_run=1))
    p = plan(pr_event(), gh)
    assert [t.adr_path for t in p.targets] == [KAFKA] and p.capped == (REDIS,)
    body = pr.capped_comment(p)
    assert body.startswith(f"<!-- adr-review:v1 path={pr.CAPPED_MARKER_PATH} ")
    assert f"`/adr-review {REDIS}`" in body
    named = plan(command(f"/adr-review {REDIS}"), gh)  # the command it gives reviews that one
    assert [t.adr_path for t in named.targets] == [REDIS] and named.capped == ()


def test_a_command_naming_a_file_that_is_not_a_changed_adr_reviews_nothing() -> None:
    p = plan(command("/adr-review docs/adr/0001-postgres-as-primary-store.md"), github())
    assert p.kind == "review" and p.targets == () and "none of" in p.summary


@pytest.mark.parametrize(
    "event",
    [
        pr_event(labels=("adr-review:skip",)),
        pr_event(labels=("ADR-Review:Skip",)),
        pr_event(title="WIP [skip adr-review]"),
    ],
)
def test_a_pr_the_team_asked_to_skip_is_not_reviewed_but_a_command_still_runs(
    event: PullRequestEvent,
) -> None:
    gh = github()
    assert plan(event, gh).kind == "ignore" and "not reviewed" in plan(event, gh).summary
    assert plan(command("/adr-review"), gh).targets  # an explicit command is an explicit request


def test_a_spent_month_plans_without_the_model_and_keys_say_so() -> None:
    gh = github(config=limited(spend_per_month_usd=5))
    normal = plan(pr_event(), gh)
    blocked = plan(pr_event(), gh, spend_blocked=lambda c: "monthly spend cap reached ($5.00 of $5.00)")
    assert blocked.spend_note and blocked.targets[0].no_model == "budget_cap"
    assert blocked.targets[0].run_key != normal.targets[0].run_key  # next month: reviewed with the model
    assert blocked.targets[0].run_key == plan(pr_event(), gh, online=False).targets[0].run_key


def test_the_budget_stops_model_calls_at_the_caps_and_books_what_was_paid() -> None:
    from adr_review.config import LimitsConfig
    from adr_review.core.results import Usage
    from adr_review.pipeline.plans.budget import Budget, BudgetedLlm
    from adr_review.pipeline.ports import LlmError, LlmRequest
    from tests.fakes.llm import FakeLlm

    store = SqliteStateStore(":memory:")
    clock = lambda: 1_796_000_000.0  # noqa: E731  (2026-11)
    fake = FakeLlm().on("p", {"ok": True}, usage=Usage(calls=1, cost_usd=0.4))
    req = LlmRequest("p", "s", "u", {}, "m", None, 100)
    run = BudgetedLlm(fake, Budget(store, REPO, LimitsConfig(spend_per_run_usd=1.0), clock))
    run.complete(req), run.complete(req), run.complete(req)  # 1.2 spent: the third was allowed at 0.8
    with pytest.raises(LlmError) as refused:
        run.complete(req)
    assert refused.value.kind == "budget" and "per run" in str(refused.value) and fake.count() == 3
    month = LimitsConfig(spend_per_month_usd=2.0)
    assert Budget(store, REPO, month, clock).blocked() is None  # 1.2 of 2.0 this month
    BudgetedLlm(fake, Budget(store, REPO, month, clock)).complete(req)
    BudgetedLlm(fake, Budget(store, REPO, month, clock)).complete(req)
    assert "monthly spend cap" in (Budget(store, REPO, month, clock).blocked() or "")
    assert Budget(store, "other/repo", month, clock).blocked() is None  # per repository
    next_month = lambda: 1_796_000_000.0 + 40 * 86400  # noqa: E731
    assert Budget(store, REPO, month, next_month).blocked() is None


def _published_body(usd: float, month: str) -> str:
    from adr_review.core.feedback import Revision, next_ledger, with_ledger

    return with_ledger("review", next_ledger(None, Revision("ab" * 8, (), usd, ("c0ffee" * 2,)), month))


@pytest.mark.parametrize(
    ("local", "published", "mine", "seen"),
    [
        (0.0, [1.5, 0.5], 0.0, 2.0),  # other PRs' jobs, from their comments: the cache knew nothing
        (0.0, [1.5], 0.25, 1.75),  # and what this job spends on top
        (3.0, [1.0], 0.0, 3.0),  # the cache knows more (a job that never published): the larger
        (0.0, [], 0.0, 0.0),
    ],
)
def test_the_action_month_adds_what_the_comments_booked_to_this_jobs_spend(
    local: float, published: list[float], mine: float, seen: float
) -> None:
    from adr_review.pipeline.plans.budget import PublishedMonth, month_start

    store = SqliteStateStore(":memory:")
    store.add_spend(REPO, "2026-12", local)
    reads: list[float] = []

    def comments(since: float) -> list[str]:
        reads.append(since)
        return [_published_body(u, "2026-12") for u in published] + [_published_body(9.0, "2026-11")]

    month = PublishedMonth(store, comments)
    if mine:
        month.add_spend(REPO, "2026-12", mine)
    assert month.spent(REPO, "2026-12") == pytest.approx(seen)
    assert month.spent(REPO, "2026-12") == pytest.approx(seen)
    assert reads == [month_start("2026-12")]  # one read per job and month


def test_the_action_month_falls_back_to_the_cache_when_comments_cannot_be_read() -> None:
    from adr_review.pipeline.plans.budget import PublishedMonth
    from adr_review.pipeline.ports import GitHubError

    store = SqliteStateStore(":memory:")
    store.add_spend(REPO, "2026-12", 0.75)

    def refused(since: float) -> list[str]:
        raise GitHubError("list this month's comments", "Bad credentials", 401)

    assert PublishedMonth(store, refused).spent(REPO, "2026-12") == pytest.approx(0.75)


# --- publishing under races (issue 16; app/adr_review/pipeline/plans/publish.py) -----------------------------------------


def store_locks(store: SqliteStateStore, owner: str) -> Any:
    from adr_review.pipeline.locks import StoreLocks

    return StoreLocks(store, owner, poll_s=0.01)


class SlowFinds:
    """Every comment lookup takes `delay` seconds, then calls `hook(n)` (n: this thread's lookups so
    far) before answering: two runs' comment stages can be made to overlap."""

    def __init__(self, gh: MemoryGitHub, delay: float, hook: Any = None) -> None:
        import threading

        self.real, self.delay, self.hook = gh.find_comment, delay, hook
        self.calls: dict[int, int] = {}
        self.lock = threading.Lock()
        gh.find_comment = self  # type: ignore[method-assign]

    def __call__(self, repo: str, number: int, path: str) -> Any:
        import threading
        import time

        with self.lock:
            n = self.calls[threading.get_ident()] = self.calls.get(threading.get_ident(), 0) + 1
        time.sleep(self.delay)
        found = self.real(repo, number, path)
        if self.hook is not None:  # after the read: what the caller found is already decided
            self.hook(n)
        return found


def test_two_runs_of_one_adr_in_their_comment_stage_post_one_comment() -> None:
    """Two comment stages at once used to both find no comment and both create one."""
    import contextlib
    import threading

    gh = github()
    (t,) = plan(pr_event(), gh, online=False).targets
    (forced,) = plan(command("/adr-review"), gh, online=False).targets  # same ADR, another key
    store = SqliteStateStore(":memory:")
    pr.run_target(t, deps(gh, writes=False))  # warm (templates, parsers): both runs then keep pace
    both_publishing = threading.Barrier(2, timeout=2.0)

    def meet(n: int) -> None:  # the lookup of each run's comment stage: both runs at once
        if n == 2:
            with contextlib.suppress(threading.BrokenBarrierError):
                both_publishing.wait()  # with the comment lock the other run cannot come: 2 s, then on

    SlowFinds(gh, 0.0, meet)
    outs: list[Any] = []
    runs = [
        threading.Thread(
            target=lambda t=t, o=o: outs.append(
                pr.run_target(t, deps(gh, comment_lock=store_locks(store, o)))
            )
        )
        for t, o in ((t, "w1"), (forced, "w2"))
    ]
    for r in runs:
        r.start()
    for r in runs:
        r.join()
    assert len(gh.comments[N]) == 1
    assert sorted(o.result for o in outs) == ["created", "edited"]


def test_a_run_cancelled_inside_its_comment_stage_publishes_nothing() -> None:
    """The older head's run is cancelled (the newer head's plan) while it looks its comment up; the
    newer head's review then waits for the comment lock and is what the PR shows."""
    import threading

    gh = github()
    (old,) = plan(pr_event(), gh, online=False).targets
    newer = "n" * 40
    gh.files[newer] = dict(gh.files[HEAD], **{KAFKA: gh.files[HEAD][KAFKA] + b"\nOne more consequence.\n"})
    gh.pulls[N] = PullRequestInfo(REPO, N, newer, BASE, "main", REPO, False, "open")
    (new,) = plan(pr_event(head_sha=newer, action="synchronize"), gh, online=False).targets
    store = SqliteStateStore(":memory:")
    cancelled, new_done = threading.Event(), threading.Event()
    outs: dict[str, Any] = {}

    def still_current() -> None:
        if cancelled.is_set() and threading.current_thread().name == "old":
            raise pr.RunAbandoned("cancelled: superseded by nnnn")

    def run_new() -> None:
        outs["new"] = pr.run_target(new, deps(gh, comment_lock=store_locks(store, "w-new"), push_order=2))
        new_done.set()

    def inside_old_comment_stage(n: int) -> None:
        if threading.current_thread().name == "old" and n == 2:  # 1: already_published, 2: publish
            cancelled.set()
            threading.Thread(target=run_new, name="new").start()
            new_done.wait(1.0)  # with the lock, the new run waits for this one

    SlowFinds(gh, 0.0, inside_old_comment_stage)

    def run_old() -> None:
        d = deps(gh, comment_lock=store_locks(store, "w-old"), push_order=1, still_current=still_current)
        try:
            outs["old"] = pr.run_target(old, d)
        except pr.RunAbandoned as exc:
            outs["old"] = exc

    t = threading.Thread(target=run_old, name="old")
    t.start()
    t.join()
    assert new_done.wait(10)
    [comment] = gh.comments[N]
    assert comment.marker_key == new.run_key and comment.marker_head == newer
    assert isinstance(outs["old"], pr.RunAbandoned) and outs["new"].result == "created"


def test_a_comment_whose_marker_names_a_newer_head_is_never_overwritten() -> None:
    gh = github()
    (t,) = plan(pr_event(), gh, online=False).targets
    newer = pr.run_target(t, deps(gh, push_order=5))  # the newer head's review, published first
    (comment,) = gh.comments[N]
    assert (comment.marker_head, comment.marker_order) == (HEAD, 5)
    older_head = "0" * 40
    (late,) = plan(command("/adr-review"), gh, online=False).targets
    late = pr.Target.from_json({**late.to_json(), "head_sha": older_head})  # planned at an older push
    gh.files[older_head] = gh.files[HEAD]
    out = pr.run_target(late, deps(gh, push_order=3))
    assert out.result == "superseded" and "left as it is" in (out.error or "")
    assert gh.comments[N] == [comment] and newer.result == "created"
    again = pr.run_target(pr.Target.from_json({**late.to_json(), "head_sha": HEAD}), deps(gh, push_order=5))
    assert again.result == "edited"  # the same head (a forced re-run) edits it, as always


def test_only_our_own_comment_counts_and_a_refused_edit_gets_our_own() -> None:
    gh = github()
    (t,) = plan(pr_event(), gh, online=False).targets
    forged = gh.add_comment(N, f"<!-- adr-review:v1 path={KAFKA} key={t.run_key} -->\nnot ours", "other[bot]")
    out = pr.run_target(t, deps(gh))
    assert out.result == "created"  # the pasted marker neither satisfied the run nor got overwritten
    assert gh.comments[N][0] == forged and len(gh.comments[N]) == 2
    gh.refuse_edits.add(gh.comments[N][1].id)  # e.g. GitHub answers 403 to our edit
    (forced,) = plan(command("/adr-review"), gh, online=False).targets
    again = pr.run_target(forced, deps(gh))
    assert again.result == "created" and len(gh.comments[N]) == 3
    assert gh.find_comment(REPO, N, KAFKA).marker_key == forced.run_key  # type: ignore[union-attr]


def test_the_same_text_is_not_edited_and_the_marker_is_then_not_refreshed() -> None:
    from adr_review.core.marker import without_marker
    from adr_review.pipeline.checkpoint import memo_for
    from adr_review.pipeline.plans.publish import Rendered, publish

    gh = github()
    (t,) = plan(pr_event(), gh, online=False).targets
    first = pr.run_target(t, deps(gh))
    (before,) = gh.comments[N]
    other = pr.Target.from_json({**t.to_json(), "run_key": "rk2-" + "0" * 32})  # another key, same text
    gh.calls.clear()
    store = SqliteStateStore(":memory:")
    assert first.review is not None
    out = publish(other, Rendered(without_marker(before.body), first.review), deps(gh), memo_for(store, "k"))
    assert out.result == "unchanged" and "edit_comment" not in gh.calls and "create_comment" not in gh.calls
    assert gh.comments[N] == [before] and before.marker_key == t.run_key  # the marker keeps the old key
    assert store.get("k", "comment") == {
        "comment_id": before.id, "created": False, "html_url": before.html_url, "unchanged": True
    }  # fmt: skip


def test_after_a_crash_past_the_render_checkpoint_nothing_upstream_runs_again() -> None:
    """A failed critic is not checkpointed: a resumed run used to call it again (and pay), then post
    the stored render anyway, which never showed what the second call found."""
    from adr_review.pipeline.checkpoint import memo_for
    from tests.fakes.blindspot_answers import da_answer, judge_echo_answer
    from tests.fakes.llm import FakeLlm

    llm = FakeLlm()
    llm.on("recall-pre-gate", {"citations": []})
    llm.on("blindspot-devils-advocate", da_answer())
    llm.on("blindspot-premortem", {"failure_story": "x", "scenarios": []})
    llm.fail_first("blindspot-premortem", 1)  # degrades the first time
    llm.on("blindspot-judge", lambda req: judge_echo_answer(req.user))
    gh = github()
    (t,) = plan(pr_event(), gh).targets
    store = SqliteStateStore(":memory:")
    d = deps(gh, checkpoints=store)
    d.llm = llm
    gh.fail["create_comment"] = GitHubError("comment", "bad gateway", 502)  # the crash: after render
    with pytest.raises(GitHubError):
        pr.run_target(t, d, memo_for(store, t.run_key))
    paid = llm.counts()
    assert store.get(t.run_key, "render") is not None and paid["blindspot-premortem"] == 1
    del gh.fail["create_comment"]
    out = pr.run_target(t, d, memo_for(store, t.run_key))
    assert out.result == "created" and llm.counts() == paid  # no model call on the way to the comment
    assert ("render", "skipped-checkpoint") in [(a.stage, a.outcome) for a in store.attempts(t.run_key)]


def test_an_internal_error_comment_never_carries_the_exceptions_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected failure's message may hold a database error, a path or a value from an ADR: the
    public comment is the translated note with the run id, the log has the rest."""

    def explode(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("AdminShutdown: terminating connection; password=hunter2 at /srv/secret")

    monkeypatch.setattr(pr, "review_adr", explode)
    gh = github(changed=(KAFKA,))
    targets = plan(pr_event(), gh, online=False).targets
    outs = run_inline(targets, deps(gh), SqliteStateStore(":memory:"))
    assert outs[0].review is not None and outs[0].review.error == INTERNAL_ERROR
    (comment,) = gh.comments[N]
    assert targets[0].run_key[:12] in comment.body
    assert not any(
        word in comment.body for word in ("AdminShutdown", "hunter2", "/srv/secret", "RuntimeError")
    )


def test_an_index_server_outage_is_not_remembered_the_next_search_tries_again() -> None:
    """An index that cannot be built for a reason of its own degrades recall for the run (remembered);
    a server that is down is an outage: it propagates each time, and once the server is back the same
    folder's index opens and searches."""
    from adr_review.pipeline.plans.folders import LazyIndex

    opened: list[str] = []

    def open_index() -> Any:
        opened.append("try")
        if len(opened) == 1:
            raise InfrastructureError("Chroma server http://chroma:8000: ConnectError")
        return NoIndex()

    index = LazyIndex(open_index, [], label="docs/adr")
    with pytest.raises(InfrastructureError):
        index.search("kafka")
    with pytest.raises(RuntimeError, match="no index in this test"):  # NoIndex's own answer: it opened
        index.search("kafka")
    assert len(opened) == 2
