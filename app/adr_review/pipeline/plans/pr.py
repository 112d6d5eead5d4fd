"""The pull-request use case, one for every entrypoint: both call `plan`, then carry the plan out with
app/adr_review/pipeline/plans/carry_out.py (the Action's Inline lifecycle reviews each target with `run_target` in the
job; the App's Enqueue stores the targets as review runs, and each review run calls `run_target`).
Every rule below therefore holds for both, and lives nowhere else:

plan(ctx, gh)  event -> screen (unless the webhook's ack did) -> decision (with the permission check) -> repo config from the default branch
               (strict: an invalid file is reported, never replaced by the defaults) -> the PR's live
               head (a newer push supersedes this event) -> the changed ADRs -> one Target per ADR,
               with its run key.
run_target     idempotence (a comment whose marker carries this run key is left alone: no model call)
               -> a stored render is posted as it is, else the base folder and its index -> review
               -> render -> publish (app/adr_review/pipeline/plans/publish.py: still current? serialised, ours only,
               never over a newer head's comment).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import posixpath
from collections.abc import Callable
from dataclasses import dataclass

from adr_review.config import REPO_CONFIG_PATH, RepoConfig, RepoConfigError, parse_repo_config
from adr_review.core.adr_paths import is_adr_candidate
from adr_review.core.results import INTERNAL_ERROR
from adr_review.core.triggers import (
    CommentEvent,
    Decision,
    Event,
    PullRequestEvent,
    changed_adrs,
    decide_screened,
    is_markdown,
    no_adr_summary,
    screen,
)
from adr_review.pipeline.adr.review import LlmUnavailable, ReviewDeps, ReviewTarget, error_review, review_adr
from adr_review.pipeline.code_guard.guard_run import guarded_files
from adr_review.pipeline.keys import folder_digest, link_base
from adr_review.pipeline.locks import LockFactory, no_lock
from adr_review.pipeline.plans.folders import FolderCache, Notify, log_notice
from adr_review.pipeline.plans.notices import (
    CAPPED_MARKER_PATH,
    capped_comment,
    config_error_comment,
    skip_reason,
)
from adr_review.pipeline.plans.publish import (
    Published,
    Rendered,
    already_published,
    publish,
    render,
    stored_render,
)
from adr_review.pipeline.plans.targets import FeedbackAction, GuardTarget, Plan, Target
from adr_review.pipeline.ports import (
    GitHubError,
    GitHubPort,
    InfrastructureError,
    LlmPort,
    PromptLibrary,
    PullRequestInfo,
    RunAbandoned,
    StageMemo,
    no_memo,
)
from adr_review.pipeline.state_ports import CheckpointStore, FeedbackLog

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
    # Why the month's spend cap stops model calls before the run starts (budget.Budget.blocked), or None.
    spend_blocked: Callable[[RepoConfig], str | None] = lambda c: None
    # The webhook's acknowledgement screened this delivery already (app/adr_review/pipeline/server/intake.py): the
    # screen runs once per delivery, and the plan run's reading of it is the same field map's.
    screened: bool = False


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
    early = None if ctx.screened else screen(event)
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
    decision = decide_screened(event, review_drafts=drafts)
    if decision.needs_permission_check and isinstance(event, CommentEvent):
        permission = gh.permission(ctx.repo, event.sender.login)
        decision = decide_screened(event, review_drafts=drafts, permission=permission)
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
        return dataclasses.replace(out, ref=default_branch)
    assert isinstance(event, PullRequestEvent | CommentEvent)
    if isinstance(event, PullRequestEvent) and (skip := skip_reason(event, config)) is not None:
        return dataclasses.replace(out, kind="ignore", summary=skip)
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
    feedback = None
    if decision.kind in ("dismiss", "feedback") and isinstance(event, CommentEvent):
        feedback = FeedbackAction(
            event.sender.login, event.comment_id, decision.finding_id, decision.reason, decision.ticks
        )
    return Plan(
        feedback=feedback,
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
    adrs = [] if decision.guard_only else changed_adrs(files, config.adr_paths, accept=is_adr_candidate)
    nonce = f"comment-{event.comment_id}" if isinstance(event, CommentEvent) and decision.forced else None
    online = ctx.online and not decision.read_only
    guard = None
    if decision.guard_only or config.guard.enabled:
        g = config.guard
        if guarded_files(files, config.adr_paths, g.paths, g.ignore):
            note = ctx.spend_blocked(config) if online else None  # the caps, before any model call
            guard = GuardTarget(pr.head_sha, pr.base_sha, pr.title, pr.body, ctx.prompt_hash,
                                online and note is None, nonce)  # fmt: skip
        elif decision.guard_only:
            return dataclasses.replace(
                out,
                head_sha=pr.head_sha,
                summary=f"adr-review: #{pr.number} changes no code the guard reads.",
            )
    if not adrs and guard is not None:
        summary = (
            f"adr-review: #{pr.number} changes no ADR; the guard reads its code against the accepted ADRs."
        )
        return dataclasses.replace(out, kind="guard", head_sha=pr.head_sha, guard=guard, summary=summary)
    if decision.only_paths:
        adrs = [f for f in adrs if f.path in decision.only_paths]
        if not adrs:
            named = ", ".join(sorted(decision.only_paths))
            return dataclasses.replace(
                out, head_sha=pr.head_sha, summary=f"adr-review: none of {named} is an ADR this PR changes."
            )
    if not adrs:
        return dataclasses.replace(
            out, head_sha=pr.head_sha, summary=no_adr_summary(pr.number, len(files), config.adr_paths)
        )
    limit = config.limits.max_adrs_per_run
    adrs, capped = adrs[:limit], tuple(f.path for f in adrs[limit:])
    spend_note = ctx.spend_blocked(config) if online else None
    online = online and spend_note is None
    digests = {
        d: _folder_digest(gh, ctx.repo, pr.base_sha, d)
        for d in sorted({posixpath.dirname(f.path) for f in adrs})
    }
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
                run_key=review_target.key(
                    config, ctx.prompt_hash, online=online, folder_digest=digests[posixpath.dirname(f.path)]
                ),
                folder_digest=digests[posixpath.dirname(f.path)],
                no_model="budget_cap" if spend_note else None,
                config=config,
                nonce=nonce,
                stages=decision.stages,
                content=content,
            )
        )
    return dataclasses.replace(
        out,
        head_sha=pr.head_sha,
        targets=tuple(targets),
        missing=tuple(missing),
        capped=capped,
        spend_note=spend_note,
        guard=guard,
    )


def _folder_digest(gh: GitHubPort, repo: str, ref: str, adr_dir: str) -> str:
    """What the review's recall can read of its folder at the base: part of the run key, so a change to
    a past ADR re-reviews (content-addressed stages then pay only where a prompt's inputs changed)."""
    prefix = adr_dir.strip("/") + "/" if adr_dir.strip("/") else ""
    return folder_digest(
        (f.path, f.blob_sha)
        for f in gh.list_files(repo, ref, [adr_dir.strip("/")])
        if is_markdown(f.path) and is_adr_candidate(f.path[len(prefix) :])
    )


# --------------------------------------------------------------------------------------------------
# run_target


@dataclass
class RunDeps:
    gh: GitHubPort
    llm: LlmPort | None
    folders: FolderCache
    web_url: str
    prompts: PromptLibrary  # the composition root's (loaded and hashed once)
    writes: bool = True  # False: dry run, or a fork PR's read-only token: render, never write
    recall_enabled: bool = True
    llm_unavailable_reason: LlmUnavailable = "no_api_key"
    notify: Notify = log_notice
    still_current: Callable[[], None] = lambda: None  # raises to abandon the run before it writes
    comment_lock: LockFactory = no_lock  # the App: the store's lock per (repo, PR, ADR) comment
    push_order: int | None = None  # when the target's head was pushed (the App: app_runs), in the marker
    checkpoints: CheckpointStore | None = None  # this run's: a stored render is posted, nothing re-run
    feedback: FeedbackLog | None = None  # where the comment's ledger and boxes are recorded (issue 17)
    # Record the boxes as the comment shows them (the Action); the App counts only the edits it saw.
    feedback_from_boxes: bool = True


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
    """Review one ADR and publish its comment (app/adr_review/pipeline/plans/publish.py: the writing half and its race
    rules). GitHubError propagates (the caller reports or retries)."""
    path = target.adr_path
    done = already_published(target, deps, memo)
    if done is not None:
        return done
    rendered = stored_render(target, deps, memo) or _review_and_render(target, deps, memo, reused or [])
    if rendered.review.error:
        deps.notify("error", f"{path}: {rendered.review.error}", path)
    return publish(target, rendered, deps, memo)


def _review_and_render(target: Target, deps: RunDeps, memo: StageMemo, reused: list[str]) -> Rendered:
    gh, path = deps.gh, target.adr_path
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
        review = review_adr(rt, review_deps, memo, run_key=target.run_key, reused=reused)
    except (GitHubError, RunInputError, RunAbandoned, InfrastructureError):
        raise
    except Exception:  # one ADR failing never stops the others; its comment says so (the log says why)
        log.exception("review_failed", extra={"path": path, "run_key": target.run_key})
        review = error_review(rt, target.config, adr_dir, INTERNAL_ERROR, target.run_key, 0.0)
    return render(review, base, memo)


__all__ = [
    "CAPPED_MARKER_PATH",
    "capped_comment",
    "skip_reason",
    "Plan",
    "PrContext",
    "Published",
    "RunDeps",
    "RunInputError",
    "Target",
    "config_error_comment",
    "plan",
    "read_config",
    "run_target",
    "with_content",
]
