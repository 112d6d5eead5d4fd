"""Webhook intake: a verified delivery -> the runs it implies, fast enough for the acknowledgement path.

The webhook must answer within GitHub's 10 s (we aim for well under 100 ms) and store the delivery with
its runs in one transaction, so nothing here calls an API: the event is read from the payload's few
fields the first screen (app/core/triggers.screen) needs, without validating a payload model. The
worker's `plan` stage parses the stored payload (app/adapters/events), applies the repo config and the
permission check, and fans the plan out into one review run per ADR.

A plan's run key names what it is about, so repeats of the same intent collapse into one run:
  pull_request   plan:<repo>#<n>@<head sha>:<ready|draft>   (a draft turning ready is a new plan)
  issue_comment  plan:<repo>#<n>:comment:<comment id>        (each command is its own forced re-run)
  an edit        plan:<repo>#<n>:edit:<comment id>:<delivery> (of our comment: each edit may tick a box)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.core.triggers import Actor, CommentEvent, Event, OtherEvent, PullRequestEvent, screen
from app.pipeline.queue import Delivery, RunSpec

HANDLED_EVENTS = frozenset({"pull_request", "issue_comment"})


@dataclass(frozen=True)
class Intake:
    """What to do with a delivery: `runs` to store with it, or nothing (`ignored` says why)."""

    runs: tuple[RunSpec, ...]
    ignored: str | None = None
    installation_id: int | None = None
    repo: str | None = None
    action: str | None = None


def _s(d: Mapping[str, Any] | None, key: str, default: str = "") -> str:
    v = (d or {}).get(key)
    return v if isinstance(v, str) else default


def _m(d: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    v = (d or {}).get(key)
    return v if isinstance(v, Mapping) else {}


def quick_event(name: str, payload: Mapping[str, Any]) -> Event:
    """The core event from the few payload fields the screen reads (missing fields -> OtherEvent)."""
    repo = _m(payload, "repository")
    sender = _m(payload, "sender")
    actor = Actor(_s(sender, "login"), _s(sender, "type", "User"))
    action = _s(payload, "action")
    if name == "pull_request":
        pr = _m(payload, "pull_request")
        head, base = _m(pr, "head"), _m(pr, "base")
        number = payload.get("number", pr.get("number"))
        if not isinstance(number, int) or not _s(head, "sha") or not _s(repo, "full_name"):
            return OtherEvent(name, action or None)
        head_repo = _m(head, "repo")
        return PullRequestEvent(
            event_name=name,
            action=action,
            repo=_s(repo, "full_name"),
            number=number,
            draft=bool(pr.get("draft") or False),
            head_sha=_s(head, "sha"),
            base_sha=_s(base, "sha"),
            base_ref=_s(base, "ref"),
            head_repo=_s(head_repo, "full_name") or None,
            sender=actor,
            default_branch=_s(repo, "default_branch"),
        )
    if name == "issue_comment":
        issue, comment = _m(payload, "issue"), _m(payload, "comment")
        number, cid = issue.get("number"), comment.get("id")
        if not isinstance(number, int) or not isinstance(cid, int) or not _s(repo, "full_name"):
            return OtherEvent(name, action or None)
        return CommentEvent(
            action=action,
            repo=_s(repo, "full_name"),
            number=number,
            on_pull_request=isinstance(issue.get("pull_request"), Mapping),
            comment_id=cid,
            body=_s(comment, "body"),
            author_association=_s(comment, "author_association", "NONE"),
            sender=actor,
            default_branch=_s(repo, "default_branch"),
            previous_body=_s(_m(_m(payload, "changes"), "body"), "from") or None,
        )
    return OtherEvent(name, action or None)


def plan_key(event: PullRequestEvent | CommentEvent, delivery_id: str | None = None) -> str:
    if isinstance(event, PullRequestEvent):
        return f"plan:{event.repo}#{event.number}@{event.head_sha}:{'draft' if event.draft else 'ready'}"
    if event.action == "edited":  # every edit is its own (ticks go on and off); a redelivery is not
        return f"plan:{event.repo}#{event.number}:edit:{event.comment_id}:{delivery_id or 'unknown'}"
    return f"plan:{event.repo}#{event.number}:comment:{event.comment_id}"


def intake(
    name: str, payload: Mapping[str, Any], *, max_attempts: int = 3, delivery_id: str | None = None
) -> Intake:
    """The runs a delivery implies (at most one plan run), or why it is ignored."""
    installation = _m(payload, "installation").get("id")
    inst = installation if isinstance(installation, int) else None
    repo = _s(_m(payload, "repository"), "full_name") or None
    action = _s(payload, "action") or None
    if name not in HANDLED_EVENTS:
        return Intake((), f"event {name} is not handled", inst, repo, action)
    event = quick_event(name, payload)
    first = screen(event)
    if first is not None:
        return Intake((), first.summary, inst, repo, action)
    assert isinstance(event, PullRequestEvent | CommentEvent)
    spec: dict[str, Any] = {"event": name, "action": action}
    head_sha = ""
    if isinstance(event, PullRequestEvent):
        head_sha = event.head_sha
        spec.update(draft=event.draft, base_sha=event.base_sha)
    else:
        spec.update(comment_id=event.comment_id)
    run = RunSpec(
        run_key=plan_key(event, delivery_id),
        kind="plan",
        repo=event.repo,
        pr_number=event.number,
        installation_id=inst,
        head_sha=head_sha,
        spec=spec,
        max_attempts=max_attempts,
    )
    return Intake((run,), None, inst, repo, action)


def delivery_record(hook_id: str, delivery_id: str, name: str, body: bytes, result: Intake) -> Delivery:
    return Delivery(
        hook_id=hook_id,
        delivery_id=delivery_id,
        event=name,
        action=result.action,
        installation_id=result.installation_id,
        repo=result.repo,
        body_sha256=hashlib.sha256(body).hexdigest(),
        payload=body.decode("utf-8", "replace"),
    )
