"""The Action's lifecycle of a plan (app/adr_review/pipeline/plans/carry_out.py): the reviews run in this process, one
after the other, each with its run row in the state store (queued -> running -> completed / failed).
The App's lifecycle is the queue (app/adr_review/pipeline/server/app_runs.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from adr_review.config import REPO_CONFIG_PATH, RepoConfig
from adr_review.pipeline.checkpoint import memo_for
from adr_review.pipeline.locks import LockFactory, no_lock
from adr_review.pipeline.plans import pr
from adr_review.pipeline.plans.budget import metered
from adr_review.pipeline.plans.folders import FolderCache, Notify, log_notice
from adr_review.pipeline.plans.pr import Plan, Published, RunDeps, Target
from adr_review.pipeline.ports import (
    GitHubError,
    GitHubPort,
    InfrastructureError,
    LlmPort,
    PromptLibrary,
    StageMemo,
    no_memo,
)
from adr_review.pipeline.state_ports import SpendLedger, StateStore


@dataclass
class Inline:
    """Run the plan's reviews now. Its own stages (react, reply, the notices) are not memoised and
    take no lock: one job per event, and a re-run finds the comments by their markers."""

    gh: GitHubPort
    repo: str
    store: StateStore
    folders: FolderCache
    prompts: PromptLibrary
    web_url: str
    llm_for: Callable[[RepoConfig], LlmPort | None]  # the configured model, or None (no key)
    dry_run: bool = False
    config_path: str = REPO_CONFIG_PATH
    notify: Notify = log_notice
    on_failed: Callable[[Target, GitHubError], None] | None = None
    memo: StageMemo = no_memo
    lock: LockFactory = no_lock
    boxes: bool = True
    ledger: SpendLedger | None = None  # what the caps read and book (None: the store's own)

    def writes(self, plan: Plan) -> bool:
        return not (self.dry_run or plan.read_only)

    def guard_model(self, plan: Plan) -> tuple[LlmPort, PromptLibrary] | None:
        assert plan.config is not None
        llm = metered(self.llm_for(plan.config), self.ledger or self.store, self.repo, plan.config)
        return (llm, self.prompts) if llm is not None else None

    def review(self, plan: Plan) -> Sequence[Published]:
        assert plan.config is not None
        llm = None if plan.read_only or plan.spend_note else self.llm_for(plan.config)
        deps = RunDeps(
            self.gh,
            metered(llm, self.ledger or self.store, self.repo, plan.config),
            self.folders,
            self.web_url,
            writes=self.writes(plan),
            prompts=self.prompts,
            notify=self.notify,
            llm_unavailable_reason="budget_cap" if plan.spend_note else "no_api_key",
            feedback=self.store,
        )
        return run_inline(plan.targets, deps, self.store, on_failed=self.on_failed)


def run_inline(
    targets: Sequence[Target],
    deps: RunDeps,
    store: StateStore,
    *,
    on_failed: Callable[[Target, GitHubError], None] | None = None,
) -> list[Published]:
    """Each target reviewed and published; a GitHub failure of one is reported and the rest go on. An
    InfrastructureError (the state store failed) ends the job: no comment from an incomplete review."""
    out: list[Published] = []
    for target in targets:
        key = target.run_key
        meta = {
            "repo": target.repo,
            "pr": target.pr,
            "adr_path": target.adr_path,
            "head_sha": target.head_sha,
        }
        store.ensure_run(key, meta)
        store.set_state(key, "running")
        reused: list[str] = []
        try:
            published = pr.run_target(
                target, deps, memo_for(store, key, on_reuse=reused.append, salt=target.nonce), reused=reused
            )
        except GitHubError as exc:
            store.set_state(key, "failed", str(exc)[:2000])
            if on_failed is not None:
                on_failed(target, exc)
            out.append(Published(target.adr_path, "failed", error=str(exc)))
            continue
        except InfrastructureError as exc:
            with contextlib.suppress(InfrastructureError):
                store.set_state(key, "failed", str(exc)[:2000])
            raise
        error = published.review.error if published.review else None
        store.set_state(key, "failed" if error else "completed", error[:2000] if error else None)
        out.append(published)
    return out
