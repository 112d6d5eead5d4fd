"""Webhook intake: a verified delivery -> the runs it implies, fast enough for the acknowledgement path.

The webhook must answer within GitHub's 10 s (we aim for well under 100 ms) and store the delivery with
its runs in one transaction, so nothing here calls an API: the event is read by the one reader
(app/adr_review/core/events.py, its never-failing `ack_event` mode) and screened (app/adr_review/core/triggers.screen) here,
once per delivery. The worker's `plan` stage reads the stored payload with the same field map, trusts
this screen (PrContext.screened), applies the repo config and the permission check, and fans the plan
out into one review run per ADR.

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

from adr_review.core.events import ack_event, delivery_facts
from adr_review.core.triggers import CommentEvent, PullRequestEvent, screen
from adr_review.pipeline.queue import Delivery, RunSpec

HANDLED_EVENTS = frozenset({"pull_request", "issue_comment"})


@dataclass(frozen=True)
class Intake:
    """What to do with a delivery: `runs` to store with it, or nothing (`ignored` says why)."""

    runs: tuple[RunSpec, ...]
    ignored: str | None = None
    installation_id: int | None = None
    repo: str | None = None
    action: str | None = None


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
    facts = delivery_facts(payload)
    inst, repo, action = facts["installation_id"], facts["repo"], facts["action"]
    if name not in HANDLED_EVENTS:
        return Intake((), f"event {name} is not handled", inst, repo, action)
    event = ack_event(name, payload)
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
