"""What the App's workers execute: a *plan* run per delivery, then one *review* run per changed ADR.
Both call app/adr_review/pipeline/plans/pr.py and app/adr_review/pipeline/plans/carry_out.py, the same use case and plan executor the
Action runs inline; only the lifecycle (Enqueue) and the report (PlanLog) are the App's.

plan (key from app/adr_review/pipeline/server/intake.py), stages:
  plan      pr.plan over the stored payload -> checkpoint (the targets with their run keys)
  then carry_out, whose own stages are checkpointed in this run: react / reply (the 👀, the help or
  denial reply), config_error and capped (one PR comment each, upserted), the feedback writes;
  its reviews go to Enqueue: a plan reused from its checkpoint (a crash, a retry) re-reads the PR's live head and enqueues
  nothing when it moved; idempotently (INSERT OR IGNORE on run keys) enqueue the reviews, with their
  head's push order, and cancel the queued or running runs of the same PR (and ADR) at *older* heads
  (by the order the pushes arrived: a newer head's runs are never cancelled).
review (key = the target's run key), stages inside pr.run_target through the worker's memo:
  recall, critic:*, judge, render (checkpointed, so a resumed run posts exactly what it rendered),
  comment   app/adr_review/pipeline/plans/publish.py under the store's lock of (repo, PR, ADR): still current right
            before the write, never over a newer head's comment (a crash after the POST finds the
            comment by its marker). A review that finds a newer head's comment is cancelled.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from adr_review.config import REPO_CONFIG_PATH, RepoConfig
from adr_review.core.events import read_event
from adr_review.pipeline.code_guard.guard_run import GuardOutcome
from adr_review.pipeline.locks import LockFactory, StoreLocks
from adr_review.pipeline.plans import pr
from adr_review.pipeline.plans.budget import Budget, metered
from adr_review.pipeline.plans.carry_out import carry_out
from adr_review.pipeline.plans.folders import FolderCache, LoadFolder, OpenIndex, log_notice
from adr_review.pipeline.plans.publish import Published
from adr_review.pipeline.ports import GitHubPort, LlmPort, PromptLibrary, RunAbandoned, StageMemo
from adr_review.pipeline.queue import QueueItem, RunSpec
from adr_review.pipeline.server.worker import RunContext
from adr_review.pipeline.state_ports import StateStore

log = logging.getLogger(__name__)

RunInputError = pr.RunInputError


@dataclass
class AppDeps:
    store: StateStore
    # (installation, repo, delivery id) -> a client whose requests carry the delivery id
    github_for: Callable[[int | None, str, str | None], GitHubPort]
    llm_for: Callable[[RepoConfig], LlmPort | None]
    open_index: OpenIndex  # (repo, adr_dir, config)
    load_folder: LoadFolder  # (gh, repo, ref, adr_dir)
    prompts: PromptLibrary  # loaded and hashed once, by the composition root
    web_url: str = "https://github.com"
    recall_enabled: bool = True
    max_attempts: int = 3


class AppExecutor:
    def __init__(self, deps: AppDeps) -> None:
        self.deps = deps

    def execute(self, item: QueueItem, ctx: RunContext) -> None:
        if item.kind == "plan":
            self._plan(item, ctx)
        elif item.kind == "review":
            self._review(item, ctx)
        else:  # pragma: no cover - the table's CHECK constraint
            raise ValueError(f"unknown run kind {item.kind!r}")

    def _gh(self, item: QueueItem) -> GitHubPort:
        return self.deps.github_for(item.installation_id, item.repo, item.delivery_id)

    # -- plan ------------------------------------------------------------------------------------------
    def _plan(self, item: QueueItem, ctx: RunContext) -> None:
        gh, memo = self._gh(item), ctx.memo()
        plan = pr.Plan.from_json(memo("plan", lambda: self._compute_plan(item, gh).to_json()))
        lifecycle = Enqueue(
            gh, item.repo, self.deps.store, self._folders(), memo, StoreLocks(self.deps.store, ctx.owner),
            queue=lambda p: self.enqueue(item, ctx, gh, p), llm_for=self.deps.llm_for, prompts=self.deps.prompts,
        )  # fmt: skip
        carry_out(plan, lifecycle, PlanLog(item.run_key))

    def enqueue(self, item: QueueItem, ctx: RunContext, gh: GitHubPort, plan: pr.Plan) -> None:
        """The plan's reviews as queued runs (idempotent on their keys), with their head's push order;
        the runs of older heads of the same PR (and ADR) cancelled, never a newer head's."""
        d = self.deps
        ctx.check()
        if "plan" in ctx.reused and not self._head_still(item, gh, plan):
            return
        order = d.store.push_order(item.repo, item.pr_number, plan.head_sha)
        runs = [self._spec(item, t, order) for t in plan.targets]
        new = d.store.enqueue(runs)
        reason = f"superseded by {plan.head_sha[:12]}"
        number = item.pr_number
        keep = {r.run_key for r in runs}  # never cancel what this plan itself enqueues
        cancelled = d.store.cancel_superseded(item.repo, number, "", plan.head_sha, reason)  # older plans
        for r in runs:
            cancelled += d.store.cancel_superseded(item.repo, number, r.adr_path, plan.head_sha, reason, keep)
        log.info(
            "plan_enqueued",
            extra={
                "run_key": item.run_key,
                "reviews": [r.run_key for r in runs],
                "new": new,
                "cancelled": cancelled,
            },
        )

    def _head_still(self, item: QueueItem, gh: GitHubPort, plan: pr.Plan) -> bool:
        """A plan reused from its checkpoint was computed before a crash or a retry: the PR may have
        moved since. Its reviews are enqueued only if its head is still the PR's head."""
        live = gh.pull_request(item.repo, item.pr_number).head_sha
        if live == plan.head_sha:
            return True
        log.info(
            "plan_superseded",
            extra={"run_key": item.run_key, "planned": plan.head_sha[:12], "live": live[:12]},
        )
        return False

    def _compute_plan(self, item: QueueItem, gh: GitHubPort) -> pr.Plan:
        d = self.deps
        raw = d.store.delivery_payload(item.hook_id, item.delivery_id)
        if raw is None:
            raise RunInputError(f"delivery {item.delivery_id} of {item.run_key} is not stored")
        event = read_event(str(item.spec.get("event", "")), json.loads(raw))
        online = d.llm_for(RepoConfig()) is not None
        ctx = pr.PrContext(
            event,
            item.repo,
            d.prompts.hash,
            online,
            spend_blocked=lambda c: self._budget(item, c).blocked(),
            screened=True,  # by the webhook's intake, on the same reading of the same payload
        )
        return pr.plan(ctx, gh)

    def _folders(self) -> FolderCache:
        return FolderCache(self.deps.load_folder, self.deps.open_index)

    def _budget(self, item: QueueItem, config: RepoConfig) -> Budget:
        """The caps of this repository; a review run is one "run" of the per-run cap."""
        return Budget(self.deps.store, item.repo, config.limits)

    def _spec(self, item: QueueItem, target: pr.Target, push_order: int | None) -> RunSpec:
        """One queued review: its queue key is the content key at this head. The model answers are
        shared through the content-addressed stages and the comment is left alone when its marker
        carries the content key; the head in the queue key makes a push that brings back an earlier
        content (a revert) review again instead of finding that run done."""
        return RunSpec(
            run_key=queue_key(target),
            kind="review",
            repo=item.repo,
            pr_number=item.pr_number,
            installation_id=item.installation_id,
            adr_path=target.adr_path,
            head_sha=target.head_sha,
            spec={"target": target.to_json(), "push_order": push_order},
            parent_key=item.run_key,
            max_attempts=self.deps.max_attempts,
        )

    # -- review ------------------------------------------------------------------------------------------
    def _review(self, item: QueueItem, ctx: RunContext) -> None:
        d = self.deps
        gh = self._gh(item)
        target = pr.with_content(pr.Target.from_json(dict(item.spec["target"])), gh)
        assert target.content is not None
        llm = metered(
            None if target.no_model else d.llm_for(target.config), d.store, item.repo, target.config
        )
        key = target.key_now(target.content, d.prompts.hash, online=llm is not None)
        if key != target.run_key:
            self._rekey(item, replace(target, run_key=key))
        deps = pr.RunDeps(
            gh,
            llm,
            self._folders(),
            d.web_url,
            recall_enabled=d.recall_enabled,
            prompts=d.prompts,
            still_current=ctx.check,
            comment_lock=StoreLocks(d.store, ctx.owner),
            push_order=item.spec.get("push_order"),
            checkpoints=d.store,
            feedback=d.store,
            feedback_from_boxes=False,
            llm_unavailable_reason="budget_cap" if target.no_model else "no_api_key",
        )
        out = pr.run_target(target, deps, ctx.memo(target.nonce), reused=ctx.reused)
        if out.result == "superseded":  # a newer head's review is published: this one is not wanted
            d.store.cancel(item.run_key, out.error or "superseded by a newer head's review")

    def _rekey(self, item: QueueItem, target: pr.Target) -> None:
        """The prompt files or the model availability changed since the plan (a deploy, an API key
        added): the stored stages of the old key do not apply. Queue the same review under its new
        key and cancel this one, instead of failing it."""
        d = self.deps
        d.store.enqueue(
            [
                replace(
                    self._spec(item, target, item.spec.get("push_order")),
                    parent_key=item.run_key,
                    max_attempts=item.max_attempts,
                )
            ]
        )
        new = queue_key(target)
        d.store.cancel(item.run_key, f"rekeyed as {new}: prompts or model availability changed")
        log.info("review_rekeyed", extra={"run_key": item.run_key, "new_key": new})
        raise RunAbandoned(f"{item.run_key}: rekeyed as {new}")


@dataclass
class Enqueue:
    """The App's lifecycle of a plan (app/adr_review/pipeline/plans/carry_out.py): its own stages checkpointed in the
    plan run, its comments under the store's lock, and its reviews queued, each its own run."""

    gh: GitHubPort
    repo: str
    store: StateStore
    folders: FolderCache
    memo: StageMemo
    lock: LockFactory
    queue: Callable[[pr.Plan], None]
    config_path: str = REPO_CONFIG_PATH
    boxes: bool = False  # the App counts the box edits it was sent, never the comment's state
    llm_for: Callable[[RepoConfig], LlmPort | None] = lambda _config: None  # the guard check's model
    prompts: PromptLibrary | None = None

    def writes(self, plan: pr.Plan) -> bool:
        """The App's installation token may write, whatever the PR's head repository is."""
        return True

    def guard_model(self, plan: pr.Plan) -> tuple[LlmPort, PromptLibrary] | None:
        assert plan.config is not None
        llm = metered(self.llm_for(plan.config), self.store, self.repo, plan.config)
        return (llm, self.prompts) if llm is not None and self.prompts is not None else None

    def review(self, plan: pr.Plan) -> Sequence[Published]:
        self.queue(plan)
        return ()


@dataclass(frozen=True)
class PlanLog:
    """The App's report of a plan: its structured log (a run's outcome is the queue's row)."""

    run_key: str

    def notify(self, level: str, message: str, path: str | None) -> None:
        log_notice(level, message, path)

    def started(self, plan: pr.Plan) -> None:
        log.info("plan", extra={"run_key": self.run_key, "kind": plan.kind, "targets": len(plan.targets)})

    def done(self, plan: pr.Plan, summary: str) -> None:
        event = "plan_feedback" if plan.kind in ("dismiss", "feedback") else "plan_no_reviews"
        log.info(event, extra={"run_key": self.run_key, "summary": summary})

    def config_error(self, plan: pr.Plan) -> None:
        log.info("plan_config_error", extra={"run_key": self.run_key, "summary": plan.summary})

    def reindexed(
        self, plan: pr.Plan, rows: Sequence[tuple[str, int]], answers: dict[str, int] | str
    ) -> None:
        log.info("plan_reindexed", extra={"run_key": self.run_key, "folders": dict(rows), "answers": answers})

    def reviewing(self, plan: pr.Plan) -> None:
        return None

    def reviewed(self, plan: pr.Plan, outcomes: Sequence[Published]) -> None:
        return None  # enqueued: AppExecutor.enqueue logged the runs

    def guarded(self, plan: pr.Plan, outcome: GuardOutcome) -> None:
        log.info(
            "plan_guard",
            extra={
                "run_key": self.run_key,
                "result": outcome.result,
                "guard_key": outcome.key,
                "decisions": list(outcome.decisions) or "no decision implicated",
                "url": outcome.url,
                "note": outcome.note,
            },
        )


def queue_key(target: pr.Target) -> str:
    return f"{target.run_key}@{target.head_sha[:12]}"


__all__ = ["AppDeps", "AppExecutor", "Enqueue", "PlanLog", "RunAbandoned", "RunInputError"]
