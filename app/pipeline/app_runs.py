"""What the App's workers execute: a *plan* run per delivery, then one *review* run per changed ADR.

plan (key from app/pipeline/intake.py), stages:
  plan      parse the stored payload fully, read the repo config from the default branch, decide
            (drafts, bots, commands, permissions), check the PR's live head (a newer push supersedes
            this plan), list the changed ADRs and compute each review's run key -> checkpoint
  react / reply   the 👀 on a command, the help / denial reply (each its own stage: posted once)
  then, idempotently (INSERT OR IGNORE on run keys): enqueue the reviews and cancel the queued or
  running runs of the same PR (and ADR) at another head SHA.
review (key = app.pipeline.review.run_key_for, the same key the Action computes), stages:
  recall, critic:*, judge   inside review_adr, through the worker's memo (checkpointed, reused)
  render    the comment body (checkpointed, so a resumed run posts exactly what it rendered)
  comment   upsert by the hidden marker: edits the ADR's comment if there is one, else creates it;
            a crash after the POST and before the checkpoint finds the comment by its marker and edits.
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from app.config import RepoConfig
from app.core.adr import Adr
from app.core.render import render_comment
from app.core.results import Review
from app.core.serde import from_dict, to_dict
from app.core.triggers import (
    CommentEvent,
    PullRequestEvent,
    changed_adrs,
    decide,
    parse_command,
)
from app.pipeline.ports import AdrIndex, CheckpointStore, GitHubPort, LlmPort
from app.pipeline.queue import QueueItem, RunQueue, RunSpec
from app.pipeline.review import ALL_STAGES, ReviewDeps, ReviewTarget, prompts_hash, review_adr, run_key_for
from app.pipeline.worker import RunAbandoned, RunContext

log = logging.getLogger(__name__)

CONFIG_PATH = ".github/adr-review.yml"


class RunInputError(RuntimeError):
    """The inputs of a run are not what its key says (a file changed under a fixed SHA?)."""


@dataclass
class AppDeps:
    queue: RunQueue
    store: CheckpointStore
    github_for: Callable[[int | None], GitHubPort]  # per installation
    llm_for: Callable[[RepoConfig], LlmPort | None]
    index_for: Callable[[str, str, Sequence[Adr], RepoConfig], AdrIndex]  # (repo, dir, folder, config)
    load_folder: Callable[[GitHubPort, str, str, str], tuple[list[Adr], list[str]]]  # gh, repo, ref, dir
    parse_event: Callable[[str, dict[str, Any]], Any]  # app.adapters.events.parse_event
    accept_path: Callable[[str], bool] = lambda _p: True  # not a README / template
    web_url: str = "https://github.com"
    recall_enabled: bool = True
    max_attempts: int = 3
    prompts_dir: Path | None = None  # None: the packaged prompts/; hashed per run (a deploy may change them)


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

    # -- plan ------------------------------------------------------------------------------------------
    def _plan(self, item: QueueItem, ctx: RunContext) -> None:
        d = self.deps
        memo = ctx.memo()
        gh = d.github_for(item.installation_id)
        plan = memo("plan", lambda: self._compute_plan(item, gh))
        repo, number = item.repo, item.pr_number
        if plan.get("react_comment_id"):
            cid = int(plan["react_comment_id"])

            def react() -> dict[str, Any]:
                gh.add_reaction(repo, cid, "eyes")
                return {"reaction": "eyes", "comment_id": cid}

            memo("react", react)
        if plan.get("reply"):
            text = str(plan["reply"])
            memo("reply", lambda: {"comment_id": gh.create_comment(repo, number, text).id})
        runs = [_spec_from_json(r) for r in plan.get("runs", [])]
        if not runs:
            log.info("plan_no_reviews", extra={"run_key": item.run_key, "summary": plan.get("summary")})
            return
        ctx.check()
        new = d.queue.enqueue(runs)
        head = str(plan["head_sha"])
        reason = f"superseded by {head[:12]}"
        cancelled = d.queue.cancel_superseded(repo, number, "", head, reason)  # older plans of this PR
        for r in runs:
            cancelled += d.queue.cancel_superseded(repo, number, r.adr_path, head, reason)
        log.info(
            "plan_enqueued",
            extra={
                "run_key": item.run_key,
                "reviews": [r.run_key for r in runs],
                "new": new,
                "cancelled": cancelled,
            },
        )

    def _compute_plan(self, item: QueueItem, gh: GitHubPort) -> dict[str, Any]:
        d = self.deps
        raw = d.queue.delivery_payload(item.hook_id, item.delivery_id)
        if raw is None:
            raise RunInputError(f"delivery {item.delivery_id} of {item.run_key} is not stored")
        name = str(item.spec.get("event", ""))
        event = d.parse_event(name, json.loads(raw))
        default_branch = getattr(event, "default_branch", "") or gh.default_branch(item.repo)
        config, config_error = self._config(gh, item.repo, default_branch)
        decision = decide(event, review_drafts=config.review_drafts)
        if decision.needs_permission_check and isinstance(event, CommentEvent):
            permission = gh.permission(item.repo, event.sender.login)
            decision = decide(event, review_drafts=config.review_drafts, permission=permission)
        out: dict[str, Any] = {"decision": decision.kind, "summary": decision.summary, "runs": []}
        if config_error:
            out["config_error"] = config_error
        if isinstance(event, CommentEvent) and decision.react:
            out["react_comment_id"] = event.comment_id
        if decision.reply:
            out["reply"] = decision.reply
        if decision.kind != "review":
            return out
        pr = gh.pull_request(item.repo, item.pr_number)
        if isinstance(event, PullRequestEvent) and pr.head_sha != event.head_sha:
            out.update(
                decision="superseded", summary=f"head moved to {pr.head_sha[:12]}; a newer run reviews it"
            )
            return out
        if pr.state != "open":
            out.update(decision="ignore", summary=f"#{item.pr_number} is {pr.state}")
            return out
        head, base = pr.head_sha, pr.base_sha
        out["head_sha"] = head
        changed = changed_adrs(
            gh.changed_files(item.repo, item.pr_number), config.adr_paths, accept=d.accept_path
        )
        nonce: str | None = None
        stages = set(ALL_STAGES)
        if isinstance(event, CommentEvent):
            nonce = f"comment-{event.comment_id}"
            command = parse_command(event.body)
            stages = set(command.stages) if command and command.stages else stages
        online = d.llm_for(config) is not None
        prompt_hash = prompts_hash(d.prompts_dir)
        for f in changed:
            content = gh.read_file(item.repo, f.path, head)
            if content is None:
                continue
            target = ReviewTarget(
                item.repo,
                item.pr_number,
                head,
                base,
                f.path,
                content,
                force_nonce=nonce,
                stages=frozenset(stages),
            )
            key = run_key_for(target, config, prompt_hash, online=online)
            spec = RunSpec(
                run_key=key,
                kind="review",
                repo=item.repo,
                pr_number=item.pr_number,
                installation_id=item.installation_id,
                adr_path=f.path,
                head_sha=head,
                spec={
                    "base_sha": base,
                    "nonce": nonce,
                    "stages": sorted(stages),
                    "config": config.model_dump(mode="json"),
                    "content_sha256": _sha256(content),
                },
                parent_key=item.run_key,
                max_attempts=d.max_attempts,
            )
            out["runs"].append(_spec_to_json(spec))
        if not out["runs"]:
            out["summary"] = f"#{item.pr_number}: no changed ADR under {', '.join(config.adr_paths)}"
        return out

    def _config(self, gh: GitHubPort, repo: str, ref: str) -> tuple[RepoConfig, str | None]:
        """The repo config from the default branch; a broken file falls back to the defaults (and says so)."""
        raw = gh.read_file(repo, CONFIG_PATH, ref)
        if raw is None:
            return RepoConfig(), None
        try:
            data = yaml.safe_load(raw.decode("utf-8")) or {}
            return RepoConfig.model_validate(data), None
        except (yaml.YAMLError, UnicodeDecodeError, ValidationError, TypeError) as exc:
            log.warning("repo_config_invalid", extra={"repo": repo, "error": str(exc)[:500]})
            return RepoConfig(), f"{CONFIG_PATH}: {str(exc)[:500]}"

    # -- review ------------------------------------------------------------------------------------------
    def _review(self, item: QueueItem, ctx: RunContext) -> None:
        d = self.deps
        spec = item.spec
        gh = d.github_for(item.installation_id)
        config = RepoConfig.model_validate(spec.get("config") or {})
        content = gh.read_file(item.repo, item.adr_path, item.head_sha)
        if content is None or _sha256(content) != spec.get("content_sha256"):
            raise RunInputError(
                f"{item.adr_path}@{item.head_sha[:12]} is not the content this run was keyed on"
            )
        base = str(spec["base_sha"])
        adr_dir = posixpath.dirname(item.adr_path)
        folder, folder_errors = d.load_folder(gh, item.repo, base, adr_dir)
        if folder_errors:
            log.info("folder_parse_errors", extra={"run_key": item.run_key, "errors": folder_errors[:20]})
        index = d.index_for(item.repo, adr_dir, folder, config)
        llm = d.llm_for(config)
        target = ReviewTarget(
            item.repo,
            item.pr_number,
            item.head_sha,
            base,
            item.adr_path,
            content,
            force_nonce=spec.get("nonce"),
            stages=frozenset(spec.get("stages") or ALL_STAGES),
        )
        key = run_key_for(target, config, prompts_hash(d.prompts_dir), online=llm is not None)
        if key != item.run_key:
            self._rekey(item, key)
        memo = ctx.memo()

        def memo_factory(run_key: str) -> Any:
            if run_key != item.run_key:  # the prompt files changed between the check above and now
                raise RunInputError(f"review key {run_key} != queued key {item.run_key}")
            return memo

        link_base = f"{d.web_url.rstrip('/')}/{item.repo}/blob/{base}"
        deps = ReviewDeps(
            index=index,
            folder=folder,
            llm=llm,
            store=d.store,
            config=config,
            link_base=link_base,
            adr_dir=adr_dir,
            recall_enabled=d.recall_enabled,
            prompts_dir=d.prompts_dir,
            memo_factory=memo_factory,
        )
        review: Review = review_adr(target, deps)
        rendered = memo(
            "render",
            lambda: {"body": render_comment(review, link_base=link_base), "review": to_dict(review)},
        )
        body = str(rendered["body"])
        ctx.check()  # superseded while reviewing: do not publish a stale review

        def post() -> dict[str, Any]:
            comment, created = gh.upsert_comment(item.repo, item.pr_number, item.adr_path, body)
            return {"comment_id": comment.id, "created": created, "html_url": comment.html_url}

        memo("comment", post)

    def _rekey(self, item: QueueItem, key: str) -> None:
        """The prompt files or the model availability changed since the plan (a deploy, an API key
        added): the stored stages of the old key do not apply. Queue the same review under its new
        key and cancel this one, instead of failing it."""
        d = self.deps
        spec = RunSpec(
            run_key=key,
            kind="review",
            repo=item.repo,
            pr_number=item.pr_number,
            installation_id=item.installation_id,
            adr_path=item.adr_path,
            head_sha=item.head_sha,
            spec=dict(item.spec),
            parent_key=item.run_key,
            max_attempts=item.max_attempts,
        )
        d.queue.enqueue([spec])
        d.queue.cancel(item.run_key, f"rekeyed as {key}: prompts or model availability changed")
        log.info("review_rekeyed", extra={"run_key": item.run_key, "new_key": key})
        raise RunAbandoned(f"{item.run_key}: rekeyed as {key}")


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _spec_to_json(r: RunSpec) -> dict[str, Any]:
    return {
        "run_key": r.run_key,
        "kind": r.kind,
        "repo": r.repo,
        "pr_number": r.pr_number,
        "installation_id": r.installation_id,
        "adr_path": r.adr_path,
        "head_sha": r.head_sha,
        "spec": dict(r.spec),
        "parent_key": r.parent_key,
        "max_attempts": r.max_attempts,
    }


def _spec_from_json(d: dict[str, Any]) -> RunSpec:
    return RunSpec(**d)


def review_from_checkpoint(payload: dict[str, Any]) -> Review:
    """The Review a `render` checkpoint holds (for inspection and tests)."""
    return from_dict(Review, payload["review"])


__all__ = ["AppDeps", "AppExecutor", "RunAbandoned", "RunInputError", "review_from_checkpoint"]
