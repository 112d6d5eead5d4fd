"""What the App's workers execute: a *plan* run per delivery, then one *review* run per changed ADR.
Both call app/pipeline/pr.py, the same use case the Action runs inline; only the lifecycle is the App's.

plan (key from app/pipeline/intake.py), stages:
  plan      pr.plan over the stored payload -> checkpoint (the targets with their run keys)
  react / reply   the 👀 on a command, the help / denial reply (each its own stage: posted once)
  config_error    an invalid repo config, said in a PR comment (upserted: one per PR, never spam)
  then, idempotently (INSERT OR IGNORE on run keys): enqueue the reviews and cancel the queued or
  running runs of the same PR (and ADR) at another head SHA.
review (key = the target's run key), stages inside pr.run_target through the worker's memo:
  recall, critic:*, judge, render (checkpointed, so a resumed run posts exactly what it rendered),
  comment   upsert by the hidden marker (a crash after the POST finds the comment by its marker).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from app.config import REPO_CONFIG_PATH, RepoConfig
from app.core.triggers import Event
from app.pipeline import pr
from app.pipeline.folders import FolderCache, LoadFolder, OpenIndex
from app.pipeline.ports import GitHubPort, LlmPort, PromptLibrary, StateStore
from app.pipeline.queue import QueueItem, RunSpec
from app.pipeline.worker import RunAbandoned, RunContext
from app.prompts import packaged

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
    parse_event: Callable[[str, dict[str, Any]], Event]  # the one lenient webhook reader
    web_url: str = "https://github.com"
    recall_enabled: bool = True
    max_attempts: int = 3
    prompts: PromptLibrary = field(default_factory=packaged)  # loaded and hashed once


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
        d = self.deps
        memo = ctx.memo()
        gh = self._gh(item)
        plan = pr.Plan.from_json(memo("plan", lambda: self._compute_plan(item, gh).to_json()))
        pr.respond(plan, gh, item.repo, memo)
        if plan.kind == "config_error" and plan.number is not None:
            body = pr.config_error_comment(plan, REPO_CONFIG_PATH)
            number = plan.number

            def post() -> dict[str, Any]:
                comment, created = gh.upsert_comment(item.repo, number, REPO_CONFIG_PATH, body)
                return {"comment_id": comment.id, "created": created}

            memo("config_error", post)
        if not plan.targets:
            log.info("plan_no_reviews", extra={"run_key": item.run_key, "summary": plan.summary})
            return
        runs = [self._spec(item, t) for t in plan.targets]
        ctx.check()
        new = d.store.enqueue(runs)
        reason = f"superseded by {plan.head_sha[:12]}"
        number = item.pr_number
        cancelled = d.store.cancel_superseded(item.repo, number, "", plan.head_sha, reason)  # older plans
        for r in runs:
            cancelled += d.store.cancel_superseded(item.repo, number, r.adr_path, plan.head_sha, reason)
        log.info(
            "plan_enqueued",
            extra={
                "run_key": item.run_key,
                "reviews": [r.run_key for r in runs],
                "new": new,
                "cancelled": cancelled,
            },
        )

    def _compute_plan(self, item: QueueItem, gh: GitHubPort) -> pr.Plan:
        d = self.deps
        raw = d.store.delivery_payload(item.hook_id, item.delivery_id)
        if raw is None:
            raise RunInputError(f"delivery {item.delivery_id} of {item.run_key} is not stored")
        event = d.parse_event(str(item.spec.get("event", "")), json.loads(raw))
        online = d.llm_for(RepoConfig()) is not None
        ctx = pr.PrContext(event, item.repo, d.prompts.hash, online)
        return pr.plan(ctx, gh)

    def _spec(self, item: QueueItem, target: pr.Target) -> RunSpec:
        return RunSpec(
            run_key=target.run_key,
            kind="review",
            repo=item.repo,
            pr_number=item.pr_number,
            installation_id=item.installation_id,
            adr_path=target.adr_path,
            head_sha=target.head_sha,
            spec={"target": target.to_json()},
            parent_key=item.run_key,
            max_attempts=self.deps.max_attempts,
        )

    # -- review ------------------------------------------------------------------------------------------
    def _review(self, item: QueueItem, ctx: RunContext) -> None:
        d = self.deps
        gh = self._gh(item)
        target = pr.with_content(pr.Target.from_json(dict(item.spec["target"])), gh)
        assert target.content is not None
        llm = d.llm_for(target.config)
        key = target.review_target(target.content).key(target.config, d.prompts.hash, online=llm is not None)
        if key != item.run_key:
            self._rekey(item, replace(target, run_key=key))
        deps = pr.RunDeps(
            gh,
            llm,
            FolderCache(d.load_folder, d.open_index),
            d.web_url,
            recall_enabled=d.recall_enabled,
            prompts=d.prompts,
            still_current=ctx.check,
        )
        pr.run_target(target, deps, ctx.memo(), reused=ctx.reused)

    def _rekey(self, item: QueueItem, target: pr.Target) -> None:
        """The prompt files or the model availability changed since the plan (a deploy, an API key
        added): the stored stages of the old key do not apply. Queue the same review under its new
        key and cancel this one, instead of failing it."""
        d = self.deps
        d.store.enqueue(
            [replace(self._spec(item, target), parent_key=item.run_key, max_attempts=item.max_attempts)]
        )
        d.store.cancel(item.run_key, f"rekeyed as {target.run_key}: prompts or model availability changed")
        log.info("review_rekeyed", extra={"run_key": item.run_key, "new_key": target.run_key})
        raise RunAbandoned(f"{item.run_key}: rekeyed as {target.run_key}")


__all__ = ["AppDeps", "AppExecutor", "RunAbandoned", "RunInputError"]
