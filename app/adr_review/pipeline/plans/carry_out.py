"""One plan executor for every entrypoint: what a Plan (app/adr_review/pipeline/plans/pr.py::plan) makes happen, written
once. The entrypoints only choose the lifecycle and where the outcome is reported:

  lifecycle   the Action: run the reviews inline (app/adr_review/pipeline/plans/inline.py); the App: enqueue them as
              review runs (app/adr_review/pipeline/server/app_runs.py). It also says whether the plan may write (a dry
              run, a fork PR's read-only token), and supplies the plan's stage memo and comment lock
              (the App: checkpointed, the store's lock; the Action: the run's own).
  report      the Action: the runner's annotations, job summary and outputs (workflow_commands.py);
              the App: its structured log.

The table, the same for both (docs/action.md and docs/app.md say where the outcome shows):
  respond        the 👀 / 😕 on a command and the reply (help, denial), each posted once
  dismiss, feedback   the reviewer's answer recorded (app/adr_review/pipeline/reporting/feedback.py)
  config_error   an invalid repo config: one PR comment (edited in place), then reported (the Action's
                 run fails with an annotation on the file; the App logs it)
  capped         the ADRs left out by limits.max_adrs_per_run: one PR comment with the command
  reindex        every ADR folder at the default branch synced, then reviewers' recent answers read
  guard          the PR's code against its accepted ADRs, run here (app/adr_review/pipeline/code_guard/guard_run.py):
                 one guard comment, or none (kind guard; a review plan may carry a guard too)
  review         the targets handed to the lifecycle (inline: reviewed and published; App: enqueued)
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any, Protocol

from adr_review.core.marker import marker
from adr_review.pipeline.code_guard.guard_run import GuardOutcome, PlanWork, run_plan_guard
from adr_review.pipeline.locks import LockFactory, no_lock
from adr_review.pipeline.plans.folders import Notify, log_notice, reindex
from adr_review.pipeline.plans.notices import CAPPED_MARKER_PATH, capped_comment, config_error_comment
from adr_review.pipeline.plans.publish import Published, comment_lock_name, upsert_comment
from adr_review.pipeline.plans.targets import Plan
from adr_review.pipeline.ports import GitHubError, GitHubPort, StageMemo, no_memo
from adr_review.pipeline.reporting import feedback
from adr_review.pipeline.state_ports import StateStore

RECENT_ANSWERS_S = 30 * 86_400  # a re-index reads reviewers' answers on the PRs updated this recently


class Lifecycle(PlanWork, Protocol):
    """How a plan's work runs: inline (the Action) or through the queue (the App). Its gh, repo,
    folders, memo, lock, writes, store and boxes: app/adr_review/pipeline/code_guard/guard_run.py's PlanWork, what the
    guard uses."""

    @property
    def store(self) -> StateStore: ...

    @property
    def config_path(self) -> str:
        """The repo config file (named in the config-error comment)."""

    def review(self, plan: Plan) -> Sequence[Published]:
        """The plan's targets reviewed and published (inline), or queued as review runs (then ())."""
        ...


class PlanReport(Protocol):
    """Where the outcome of a plan shows: the runner's page, or the App's log."""

    def notify(self, level: str, message: str, path: str | None) -> None:
        """A problem on the way that did not stop the plan (a reaction that failed, a folder notice)."""

    def started(self, plan: Plan) -> None: ...

    def done(self, plan: Plan, summary: str) -> None:
        """The plan ended without reviews (ignored, help, denied, answers recorded, no ADR changed)."""

    def config_error(self, plan: Plan) -> None: ...

    def reindexed(self, plan: Plan, rows: Sequence[tuple[str, int]], answers: dict[str, int] | str) -> None:
        """(folder, ADR count) per folder; the answers read (counts) or why they were not (text)."""

    def reviewing(self, plan: Plan) -> None: ...

    def reviewed(self, plan: Plan, outcomes: Sequence[Published]) -> None: ...

    def guarded(self, plan: Plan, outcome: GuardOutcome) -> None:
        """The guard's outcome; silent: "no decision implicated"."""


def carry_out(plan: Plan, lifecycle: Lifecycle, report: PlanReport) -> None:
    """Everything a plan makes happen (the module doc's table). GitHubError propagates from the writes
    that are the plan's point (the caller fails the run or retries it); a failed reaction does not."""
    gh, repo, writes = lifecycle.gh, lifecycle.repo, lifecycle.writes(plan)
    report.started(plan)
    if writes:
        respond(plan, gh, repo, lifecycle.memo, report.notify, lock=lifecycle.lock)
    if plan.kind in ("dismiss", "feedback"):
        if not writes:
            return report.done(plan, plan.summary)
        applied = feedback.apply(plan, gh, lifecycle.store, repo, lifecycle.memo, boxes=lifecycle.boxes)
        return report.done(plan, applied.summary)
    if plan.kind == "config_error":
        if writes and plan.number is not None:
            body = config_error_comment(plan, lifecycle.config_path)
            _post_once(lifecycle, "config_error", plan.number, lifecycle.config_path, body)
        return report.config_error(plan)
    if plan.capped and writes and plan.number is not None:
        _post_once(lifecycle, "capped", plan.number, CAPPED_MARKER_PATH, capped_comment(plan))
    if plan.kind == "reindex" and plan.config is not None:
        ref = plan.ref or gh.default_branch(repo)
        rows = reindex(gh, repo, ref, plan.config, lifecycle.folders)
        return report.reindexed(plan, rows, _recent_answers(lifecycle))
    if plan.guard is not None and plan.config is not None and plan.number is not None:
        report.guarded(plan, run_plan_guard(plan, lifecycle))
        if plan.kind == "guard":
            return None
    if plan.kind != "review" or plan.config is None or not plan.targets:
        return report.done(plan, plan.summary)
    report.reviewing(plan)
    report.reviewed(plan, lifecycle.review(plan))
    return None


def respond(
    plan: Plan,
    gh: GitHubPort,
    repo: str,
    memo: StageMemo = no_memo,
    notify: Notify = log_notice,
    *,
    lock: LockFactory = no_lock,
) -> None:
    """A reaction on the command (👀 accepted, 😕 denied) and the reply (help, denial), each its own
    stage: posted once. A denial is explained at most once per user and PR (anyone can comment: a
    stranger's commands must not make the App post again and again); later ones get the reaction only."""
    if plan.react_comment_id is not None:
        cid, content = plan.react_comment_id, "confused" if plan.kind == "deny" else "eyes"

        def react() -> dict[str, Any]:
            gh.add_reaction(repo, cid, content)
            return {"reaction": content, "comment_id": cid}

        try:
            memo("react", react)
        except GitHubError as exc:  # a missing reaction must not stop the review
            notify("warning", str(exc), None)
    if plan.reply and plan.number is not None:
        text, number = plan.reply, plan.number
        if plan.kind == "deny":
            memo("reply", lambda: _reply_once(gh, repo, number, text, lock))
        else:
            memo("reply", lambda: {"comment_id": gh.create_comment(repo, number, text).id})


def _reply_once(gh: GitHubPort, repo: str, number: int, text: str, lock: LockFactory) -> dict[str, Any]:
    """Post `text` unless our comment with it is on the PR already: a hidden marker names the reply
    by its hash (a denial names its user, so this is once per user and PR)."""
    path = "@reply/" + hashlib.sha256(text.encode()).hexdigest()[:16]
    with lock(comment_lock_name(repo, number, path)):
        existing = gh.find_comment(repo, number, path)
        if existing is not None:
            return {"comment_id": existing.id, "already_replied": True}
        return {"comment_id": gh.create_comment(repo, number, f"{marker(path, 'reply')}\n{text}").id}


def _post_once(lifecycle: Lifecycle, stage: str, number: int, path: str, body: str) -> None:
    """One comment of the plan's own (marker `path`), upserted under the comment lock, as its stage."""

    def post() -> dict[str, Any]:
        with lifecycle.lock(comment_lock_name(lifecycle.repo, number, path)):
            comment, created = upsert_comment(lifecycle.gh, lifecycle.repo, number, path, body)
        return {"comment_id": comment.id, "created": created}

    lifecycle.memo(stage, post)


def _recent_answers(lifecycle: Lifecycle) -> dict[str, int] | str:
    """After a re-index: reviewers' answers on recently updated PRs into the store (the index is done
    whatever happens here; the answers wait for the next run)."""
    since = time.time() - RECENT_ANSWERS_S
    try:
        return feedback.sync_recent(lifecycle.gh, lifecycle.store, lifecycle.repo, since)
    except GitHubError as exc:
        return str(exc)


__all__ = ["RECENT_ANSWERS_S", "Lifecycle", "PlanReport", "carry_out", "respond"]
