"""The pull-request use case, one for every entrypoint: the Action calls `plan` and then `run_target` for
each target inline; the App's plan run stores the targets as review runs and each review run calls
`run_target`. Every rule below therefore holds for both, and lives nowhere else:

plan(ctx, gh)  event -> decision (with the permission check) -> repo config from the default branch
               (strict: an invalid file is reported, never replaced by the defaults) -> the PR's live
               head (a newer push supersedes this event) -> the changed ADRs -> one Target per ADR,
               with its run key.
run_target     idempotence (a comment whose marker carries this run key is left alone: no model call)
               -> the base folder and its index -> review -> render -> still current? -> upsert.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from app.config import REPO_CONFIG_PATH, RepoConfig, RepoConfigError, parse_repo_config
from app.core.adr_paths import is_adr_candidate
from app.core.render import render_comment, sanitize_inline
from app.core.results import Review
from app.core.serde import to_dict
from app.core.triggers import (
    CommentEvent,
    Decision,
    Event,
    PullRequestEvent,
    changed_adrs,
    decide,
    no_adr_summary,
    screen,
)
from app.pipeline.folders import FolderCache, Notify, log_notice
from app.pipeline.keys import link_base
from app.pipeline.ports import (
    GitHubError,
    GitHubPort,
    LlmPort,
    PromptLibrary,
    PullRequestInfo,
    StageMemo,
    no_memo,
)
from app.pipeline.review import ReviewDeps, ReviewTarget, error_review, review_adr
from app.pipeline.targets import Plan, Target
from app.pipeline.worker import RunAbandoned

log = logging.getLogger(__name__)


class RunInputError(RuntimeError):
    """The inputs of a run are not what its key says (a file changed under a fixed SHA?)."""


@dataclass(frozen=True)
class PrContext:
    event: Event
    repo: str
    prompt_hash: str  # of the prompt files in force (part of every run key)
    online: bool  # a model is configured for the reviews (part of every run key)
    config_path: str = REPO_CONFIG_PATH
    # The entrypoint's own settings over the repo config (the Action's inputs); raise RepoConfigError.
    adjust: Callable[[RepoConfig], RepoConfig] = lambda c: c


# --------------------------------------------------------------------------------------------------
# plan


def read_config(gh: GitHubPort, repo: str, ref: str, path: str) -> RepoConfig:
    """The repo config from the default branch (never from the PR head); absent -> the defaults.
    Raises RepoConfigError for a file that exists but is not valid: that is shown, never guessed."""
    raw = gh.read_file(repo, path, ref)
    if raw is None:
        return RepoConfig()
    try:
        return parse_repo_config(raw, path)
    except RepoConfigError as exc:
        raise RepoConfigError(f"{exc.source} (on {ref})", exc.problems) from None


def plan(ctx: PrContext, gh: GitHubPort) -> Plan:
    event = ctx.event
    early = screen(event)
    if early is not None:
        return _from_decision(early, event)
    default_branch = getattr(event, "default_branch", "") or gh.default_branch(ctx.repo)
    config: RepoConfig | None
    try:
        config = ctx.adjust(read_config(gh, ctx.repo, default_branch, ctx.config_path))
        error = None
    except RepoConfigError as exc:
        config, error = None, str(exc)
    drafts = config.review_drafts if config is not None else RepoConfig().review_drafts
    decision = decide(event, review_drafts=drafts)
    if decision.needs_permission_check and isinstance(event, CommentEvent):
        permission = gh.permission(ctx.repo, event.sender.login)
        decision = decide(event, review_drafts=drafts, permission=permission)
    out = _from_decision(decision, event, config)
    # An invalid config is shown whenever it may have changed the outcome: a review, a re-index, or a
    # draft skipped by the default `review_drafts` (never for help, denials or unrelated comments).
    draft = decision.kind == "ignore" and isinstance(event, PullRequestEvent) and event.draft
    if decision.kind not in ("review", "reindex") and not (draft and error is not None):
        return out
    if error is not None or config is None:
        return dataclasses.replace(
            out, kind="config_error", config_error=error, summary=f"adr-review: {error}"
        )
    if decision.kind == "reindex":
        return out
    assert isinstance(event, PullRequestEvent | CommentEvent)
    pr = gh.pull_request(ctx.repo, event.number)
    if isinstance(event, PullRequestEvent) and pr.head_sha != event.head_sha:
        return dataclasses.replace(
            out,
            kind="superseded",
            summary=f"adr-review: #{pr.number}: the head moved to {pr.head_sha[:12]}; the run for it reviews it.",
        )
    if pr.state != "open":
        return dataclasses.replace(
            out, kind="ignore", summary=f"adr-review: #{pr.number} is {pr.state}; nothing to do."
        )
    return _targets(ctx, gh, out, pr, decision, config, event)


def _from_decision(decision: Decision, event: Event, config: RepoConfig | None = None) -> Plan:
    return Plan(
        kind=decision.kind,
        summary=decision.summary,
        read_only=decision.read_only,
        react_comment_id=event.comment_id if isinstance(event, CommentEvent) and decision.react else None,
        reply=decision.reply,
        config=config,
        number=getattr(event, "number", None),
    )


def _targets(
    ctx: PrContext,
    gh: GitHubPort,
    out: Plan,
    pr: PullRequestInfo,
    decision: Decision,
    config: RepoConfig,
    event: PullRequestEvent | CommentEvent,
) -> Plan:
    files = gh.changed_files(ctx.repo, pr.number)
    adrs = changed_adrs(files, config.adr_paths, accept=is_adr_candidate)
    if not adrs:
        return dataclasses.replace(
            out, head_sha=pr.head_sha, summary=no_adr_summary(pr.number, len(files), config.adr_paths)
        )
    nonce = f"comment-{event.comment_id}" if isinstance(event, CommentEvent) and decision.forced else None
    online = ctx.online and not decision.read_only
    targets, missing = [], []
    for f in adrs:
        content = gh.read_file(ctx.repo, f.path, pr.head_sha)
        if content is None:
            missing.append(f.path)
            continue
        review_target = ReviewTarget(
            ctx.repo, pr.number, pr.head_sha, pr.base_sha, f.path, content, nonce, decision.stages
        )
        targets.append(
            Target(
                repo=ctx.repo,
                pr=pr.number,
                head_sha=pr.head_sha,
                base_sha=pr.base_sha,
                adr_path=f.path,
                content_sha256=hashlib.sha256(content).hexdigest(),
                run_key=review_target.key(config, ctx.prompt_hash, online=online),
                config=config,
                nonce=nonce,
                stages=decision.stages,
                content=content,
            )
        )
    return dataclasses.replace(out, head_sha=pr.head_sha, targets=tuple(targets), missing=tuple(missing))


def respond(
    plan: Plan, gh: GitHubPort, repo: str, memo: StageMemo = no_memo, notify: Notify = log_notice
) -> None:
    """👀 on an accepted command and the reply (help, denial), each its own stage: posted once."""
    if plan.react_comment_id is not None:
        cid = plan.react_comment_id

        def react() -> dict[str, Any]:
            gh.add_reaction(repo, cid, "eyes")
            return {"reaction": "eyes", "comment_id": cid}

        try:
            memo("react", react)
        except GitHubError as exc:  # a missing 👀 must not stop the review
            notify("warning", str(exc), None)
    if plan.reply and plan.number is not None:
        text, number = plan.reply, plan.number
        memo("reply", lambda: {"comment_id": gh.create_comment(repo, number, text).id})


def config_error_comment(plan: Plan, config_path: str) -> str:
    """The App's PR comment for an invalid repo config (the Action reports it in the job instead)."""
    from app.core.marker import marker

    message = sanitize_inline(plan.config_error or "", 3000, in_table=False)
    return (
        f"{marker(config_path, 'config-error')}\n"
        f"**adr-review could not read its configuration**, so no ADR of this pull request was reviewed.\n\n"
        f"{message}\n\nFix the file on the default branch, then comment `/adr-review` to run again.\n"
    )


# --------------------------------------------------------------------------------------------------
# run_target


@dataclass(frozen=True)
class Published:
    path: str
    result: str  # created | edited | unchanged | not-posted | failed
    url: str = ""
    review: Review | None = None
    body: str = ""
    error: str | None = None


@dataclass
class RunDeps:
    gh: GitHubPort
    llm: LlmPort | None
    folders: FolderCache
    web_url: str
    writes: bool = True  # False: dry run, or a fork PR's read-only token: render, never write
    recall_enabled: bool = True
    llm_unavailable_reason: Literal["no_api_key", "offline"] = "no_api_key"
    prompts: PromptLibrary | None = None  # None: the packaged prompts
    notify: Notify = log_notice
    still_current: Callable[[], None] = lambda: None  # raises to abandon the run before it writes


def with_content(target: Target, gh: GitHubPort) -> Target:
    """The target with the ADR's bytes, read at its head and checked against the keyed hash."""
    if target.content is not None:
        return target
    content = gh.read_file(target.repo, target.adr_path, target.head_sha)
    if content is None or hashlib.sha256(content).hexdigest() != target.content_sha256:
        raise RunInputError(
            f"{target.adr_path}@{target.head_sha[:12]} is not the content this run was keyed on"
        )
    return dataclasses.replace(target, content=content)


def run_target(
    target: Target, deps: RunDeps, memo: StageMemo = no_memo, *, reused: list[str] | None = None
) -> Published:
    """Review one ADR and publish its comment. GitHubError propagates (the caller reports or retries)."""
    gh, path = deps.gh, target.adr_path
    if deps.writes:
        existing = gh.find_comment(target.repo, target.pr, path)
        if existing is not None and existing.marker_key == target.run_key:
            log.info("comment_up_to_date", extra={"run_key": target.run_key, "path": path})
            found = {"comment_id": existing.id, "created": False, "html_url": existing.html_url}
            memo("comment", lambda: {**found, "up_to_date": True})  # the audit trail: satisfied, not written
            return Published(path, "unchanged", existing.html_url)
    target = with_content(target, gh)
    assert target.content is not None
    base = link_base(deps.web_url, target.repo, target.base_sha)
    adr_dir = posixpath.dirname(path)
    folder, index = deps.folders.get(gh, target.repo, target.base_sha, adr_dir, target.config)
    review_deps = ReviewDeps(
        index=index,
        folder=folder,
        llm=deps.llm,
        config=target.config,
        link_base=base,
        adr_dir=adr_dir,
        llm_unavailable_reason=deps.llm_unavailable_reason,
        recall_enabled=deps.recall_enabled,
        prompts=deps.prompts,
    )
    rt = target.review_target(target.content)
    try:
        review = review_adr(rt, review_deps, memo, run_key=target.run_key, reused=reused or [])
    except (GitHubError, RunInputError, RunAbandoned):
        raise
    except Exception as exc:  # one ADR failing never stops the others; its comment says why
        log.exception("review_failed", extra={"path": path})
        review = error_review(
            rt, target.config, adr_dir, f"internal error: {type(exc).__name__}: {exc}", target.run_key, 0.0
        )
    rendered = memo(
        "render", lambda: {"body": render_comment(review, link_base=base), "review": to_dict(review)}
    )
    body = str(rendered["body"])
    if review.error:
        deps.notify("error", f"{path}: {review.error}", path)
    deps.still_current()  # superseded while reviewing: do not publish a stale review
    if not deps.writes:
        return Published(path, "not-posted", review=review, body=body)

    def post() -> dict[str, Any]:
        comment, created = gh.upsert_comment(target.repo, target.pr, path, body)
        return {"comment_id": comment.id, "created": created, "html_url": comment.html_url}

    posted = memo("comment", post)
    return Published(
        path,
        "created" if posted.get("created") else "edited",
        str(posted.get("html_url") or ""),
        review,
        body,
    )


__all__ = [
    "Plan",
    "PrContext",
    "Published",
    "RunDeps",
    "RunInputError",
    "Target",
    "config_error_comment",
    "plan",
    "read_config",
    "respond",
    "run_target",
    "with_content",
]
