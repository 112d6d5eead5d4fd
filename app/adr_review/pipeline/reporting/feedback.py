"""Recording what reviewers do with the findings (issue 17), one use case for the Action and the App.

Where the answers come from:
- our comments: each carries its ledger (what it has shown, per ADR revision, and the cost) and the
  Adopted boxes (app/adr_review/core/feedback_boxes.py). `record_comment` copies both into the state store; publishing
  calls it for the comment it writes or finds, so the Action's next run reads the boxes as they are.
- an edit of our comment (the App's `issue_comment.edited`): the boxes that edit changed, by whom
  (`apply`, plan kind "feedback"; app/adr_review/core/triggers.py let it through only for write access).
- `/adr-review dismiss <id> [reason]` (plan kind "dismiss"): the finding is marked dismissed, with why.
- the scheduled run (`sync_recent`): every recently updated PR's comments and dismiss commands, for the
  Action, whose PR runs keep no state.
Every write is an idempotent upsert, so a retry, a redelivery or a second scan records nothing twice.

The guard comment (issue 28) goes through the same paths under its marker path, GUARD_MARKER_PATH: its
ledger lists the model check's shown answers (app/adr_review/core/guard_view.py answers_shown), so their
boxes, their ticks and `dismiss` of their ids are recorded like a finding's; the report counts them apart
(app/adr_review/core/report.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from adr_review.core.commands import ALLOWED_ASSOCIATIONS, ALLOWED_PERMISSIONS, parse_command
from adr_review.core.feedback import read_feedback
from adr_review.pipeline.plans.targets import Plan
from adr_review.pipeline.ports import GitHubError, GitHubPort, RepoComment, StageMemo, no_memo
from adr_review.pipeline.state_ports import FeedbackLog

log = logging.getLogger(__name__)

UNKNOWN_FINDING = (
    "adr-review: no finding `{id}` in this pull request's comments, so nothing was dismissed. "
    "A finding's or a guard answer's id is on its **Adopted** line."
)


def record_comment(
    store: FeedbackLog,
    repo: str,
    pr: int,
    comment: RepoComment,
    actor_ticks: Mapping[str, bool] | None = None,
    actor: str | None = None,
    *,
    boxes: bool = True,
) -> bool:
    """Our comment's ledger and boxes into the store. `actor_ticks`: boxes a known person changed
    (recorded with their login first). `boxes`: also record the other boxes as the body shows them
    (the Action: the comment is its only record); the App counts only edits it saw from people with
    write access, so a box it did not see ticked is not counted. False: no ledger."""
    if not comment.marker_path:
        return False
    return record_body(store, repo, pr, comment.marker_path, comment.body, actor_ticks, actor, boxes=boxes)


def record_body(
    store: FeedbackLog,
    repo: str,
    pr: int,
    path: str,
    body: str,
    actor_ticks: Mapping[str, bool] | None = None,
    actor: str | None = None,
    *,
    boxes: bool = True,
) -> bool:
    feedback = read_feedback(body)
    if not feedback.ledger.revisions:
        return False
    store.record_ledger(repo, pr, path, feedback.ledger)
    if actor_ticks:
        store.record_ticks(repo, pr, path, actor_ticks, actor)
    if boxes:
        shown = {**dict.fromkeys(feedback.ledger.adopted, True), **feedback.ticks}  # a box shown wins
        rest = {fid: on for fid, on in shown.items() if fid not in (actor_ticks or {})}
        store.record_ticks(repo, pr, path, rest, None)
    return True


def sync_pr(gh: GitHubPort, store: FeedbackLog, repo: str, pr: int, *, boxes: bool = True) -> int:
    """Our review comments on the PR into the store; how many had a ledger."""
    return sum(record_comment(store, repo, pr, c, boxes=boxes) for c in gh.our_comments(repo, pr))


@dataclass(frozen=True)
class Applied:
    summary: str
    recorded: bool


def apply(
    plan: Plan,
    gh: GitHubPort,
    store: FeedbackLog,
    repo: str,
    memo: StageMemo = no_memo,
    *,
    boxes: bool = True,
) -> Applied:
    """A plan of kind "feedback" (an edit's ticks) or "dismiss"; each store write is its own stage.
    `boxes`: see record_comment (the App passes False)."""
    fb, number = plan.feedback, plan.number
    assert fb is not None and number is not None, plan
    if plan.kind == "feedback":
        data = memo(
            "feedback", lambda: _ticks(gh, store, repo, number, fb.comment_id, dict(fb.ticks), fb.actor)
        )
        return Applied(str(data["summary"]), bool(data["recorded"]))
    assert fb.finding_id is not None
    fid = fb.finding_id

    def dismiss() -> dict[str, Any]:
        path = store.record_dismissal(repo, number, fid, fb.actor, fb.reason)
        if path is None:  # the store has not seen this PR's comments (the Action's fresh store)
            sync_pr(gh, store, repo, number, boxes=boxes)
            path = store.record_dismissal(repo, number, fid, fb.actor, fb.reason)
        return {"path": path}

    path = memo("dismiss", dismiss)["path"]
    _react(gh, repo, fb.comment_id, "+1" if path else "confused", memo)
    if path is None:
        text = UNKNOWN_FINDING.format(id=fid)
        memo("reply", lambda: {"comment_id": gh.create_comment(repo, number, text).id})
        return Applied(f"adr-review: #{number} shows no finding {fid}; nothing dismissed.", False)
    return Applied(f"{plan.summary} ({path})", True)


def _ticks(
    gh: GitHubPort,
    store: FeedbackLog,
    repo: str,
    pr: int,
    comment_id: int,
    ticks: dict[str, bool],
    actor: str,
) -> dict[str, Any]:
    """The boxes an edit changed, if the edited comment is one of ours (a marker pasted into somebody
    else's comment counts for nothing)."""
    ours = next((c for c in gh.our_comments(repo, pr) if c.id == comment_id), None)
    if ours is None:
        return {
            "summary": f"adr-review: comment {comment_id} is not one of ours; not counted.",
            "recorded": False,
        }
    record_comment(store, repo, pr, ours, ticks, actor, boxes=False)  # only what this edit changed
    on = sorted(fid for fid, t in ticks.items() if t)
    off = sorted(fid for fid, t in ticks.items() if not t)
    return {
        "summary": f"adr-review: {actor} adopted {on or '-'}, unadopted {off or '-'} on #{pr}.",
        "recorded": True,
    }


def _react(gh: GitHubPort, repo: str, comment_id: int, content: str, memo: StageMemo) -> None:
    def react() -> dict[str, Any]:
        gh.add_reaction(repo, comment_id, content)
        return {"reaction": content}

    try:
        memo("react", react)
    except GitHubError as exc:  # a missing reaction loses nothing that was recorded
        log.warning("feedback_reaction_failed", extra={"comment": comment_id, "error": str(exc)})


def sync_recent(gh: GitHubPort, store: FeedbackLog, repo: str, since: float) -> dict[str, int]:
    """The scheduled run: the PRs updated since `since` -> their comments' ledgers and boxes, and the
    dismiss commands of people with write access (looked up once per login)."""
    allowed: dict[str, bool] = {}
    counts = {"pulls": 0, "comments": 0, "dismissed": 0}
    for number in gh.recent_pulls(repo, since):
        counts["pulls"] += 1
        counts["comments"] += sync_pr(gh, store, repo, number)
        for c in gh.pr_comments(repo, number):
            command = parse_command(c.body) if c.body.lstrip().startswith("/") else None
            if command is None or command.kind != "dismiss" or command.finding_id is None:
                continue
            if c.author not in allowed:
                allowed[c.author] = c.author_association.upper() in ALLOWED_ASSOCIATIONS or (
                    gh.permission(repo, c.author).casefold() in ALLOWED_PERMISSIONS
                )
            if allowed[c.author] and store.record_dismissal(
                repo, number, command.finding_id, c.author, command.reason
            ):
                counts["dismissed"] += 1
    return counts


__all__ = ["Applied", "UNKNOWN_FINDING", "apply", "record_body", "record_comment", "sync_pr", "sync_recent"]
