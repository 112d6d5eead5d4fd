"""GitHub event payloads -> the plain event dataclasses of app/core/triggers.py.

Parsing goes through githubkit's webhook models first (typed, shared with the App server). Those
models track GitHub's newest schema and reject real payloads that lack a field added since (the
recorded `pull_request` examples fail on `labels[].archived_by`), and a review must not stop over a
label field it never reads: on a validation error the payload is read again through the small
lenient models below, which name only the fields the decision uses, and the fallback is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from app.core.triggers import (
    REINDEX_EVENTS,
    Actor,
    CommentEvent,
    Event,
    OtherEvent,
    PullRequestEvent,
    ReindexEvent,
)

log = logging.getLogger(__name__)

PR_EVENTS = frozenset({"pull_request", "pull_request_target"})


class EventError(ValueError):
    """A payload that cannot be read at all (not JSON, wrong shape even for the lenient models)."""


def parse_event(name: str, payload: Mapping[str, Any], *, repo_hint: str = "") -> Event:
    """One event. `repo_hint` ($GITHUB_REPOSITORY) fills in the repo for payloads without one (schedule)."""
    if name in PR_EVENTS:
        return _pull_request(name, payload)
    if name == "issue_comment":
        return _issue_comment(payload)
    if name in REINDEX_EVENTS:
        return _reindex(name, payload, repo_hint)
    return OtherEvent(event_name=name, action=_str(payload.get("action")) or None)


# --------------------------------------------------------------------------------------------------
# githubkit first


def _githubkit(name: str, payload: Mapping[str, Any]) -> Any | None:
    """The payload as githubkit's model for this event *and action* (WebhookPullRequestOpened, ...).

    Validating against the one model of the action, not githubkit's union of every action, matters:
    building the union's validator takes seconds, the single model's is ready at import.
    """
    from githubkit.compat import type_validate_python
    from githubkit_schemas.latest import models  # ~0.5 s import: only when an event is parsed

    action = payload.get("action")
    prefix = {"pull_request": "WebhookPullRequest", "issue_comment": "WebhookIssueComment"}[name]
    suffix = "".join(part.capitalize() for part in str(action).split("_"))
    model = getattr(models, prefix + suffix, None) if isinstance(action, str) else None
    if model is None:
        log.info("githubkit has no model for %s.%s; reading it leniently", name, action)
        return None
    try:
        return type_validate_python(model, payload)
    except ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else "?"
        msg = errors[0]["msg"] if errors else str(exc)
        log.info("githubkit rejected the %s payload (%s: %s); reading it leniently", name, where, msg)
        return None


def _pull_request(name: str, payload: Mapping[str, Any]) -> PullRequestEvent:
    model = _githubkit("pull_request", payload)  # pull_request_target has the same payload
    if model is not None:
        pr = model.pull_request
        return PullRequestEvent(
            event_name=name,
            action=str(model.action),
            repo=model.repository.full_name,
            number=int(model.number),
            draft=bool(_set(getattr(pr, "draft", False)) or False),
            head_sha=pr.head.sha,
            base_sha=pr.base.sha,
            base_ref=pr.base.ref,
            head_repo=pr.head.repo.full_name if _set(pr.head.repo) else None,
            sender=Actor(model.sender.login, str(model.sender.type)),
            default_branch=model.repository.default_branch,
        )
    lenient = _lenient(_PullRequestPayload, payload, name)
    lpr = lenient.pull_request
    return PullRequestEvent(
        event_name=name,
        action=lenient.action,
        repo=lenient.repository.full_name,
        number=lenient.number,
        draft=bool(lpr.draft),
        head_sha=lpr.head.sha,
        base_sha=lpr.base.sha,
        base_ref=lpr.base.ref,
        head_repo=lpr.head.repo.full_name if lpr.head.repo else None,
        sender=Actor(lenient.sender.login, lenient.sender.type),
        default_branch=lenient.repository.default_branch,
    )


def _issue_comment(payload: Mapping[str, Any]) -> CommentEvent:
    model = _githubkit("issue_comment", payload)
    if model is not None:
        return CommentEvent(
            action=str(model.action),
            repo=model.repository.full_name,
            number=int(model.issue.number),
            on_pull_request=bool(_set(getattr(model.issue, "pull_request", None))),
            comment_id=int(model.comment.id),
            body=model.comment.body or "",
            author_association=str(model.comment.author_association),
            sender=Actor(model.sender.login, str(model.sender.type)),
            default_branch=model.repository.default_branch,
        )
    lenient = _lenient(_IssueCommentPayload, payload, "issue_comment")
    return CommentEvent(
        action=lenient.action,
        repo=lenient.repository.full_name,
        number=lenient.issue.number,
        on_pull_request=lenient.issue.pull_request is not None,
        comment_id=lenient.comment.id,
        body=lenient.comment.body or "",
        author_association=lenient.comment.author_association,
        sender=Actor(lenient.sender.login, lenient.sender.type),
        default_branch=lenient.repository.default_branch,
    )


def _reindex(name: str, payload: Mapping[str, Any], repo_hint: str) -> ReindexEvent:
    """`schedule` payloads carry only the cron line; the default branch may then be unknown ("")."""
    repo = payload.get("repository")
    if isinstance(repo, Mapping):
        return ReindexEvent(
            event_name=name,
            repo=_str(repo.get("full_name")) or repo_hint,
            default_branch=_str(repo.get("default_branch")),
        )
    return ReindexEvent(event_name=name, repo=repo_hint, default_branch="")


def _set(value: Any) -> Any:
    """githubkit marks absent fields with UNSET, which is falsy; keep None and UNSET apart from values."""
    from githubkit.utils import UNSET

    return None if value is UNSET else value


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


# --------------------------------------------------------------------------------------------------
# The lenient fallback: only what the decision reads; everything else is ignored.


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _User(_Loose):
    login: str
    type: str = "User"


class _Repo(_Loose):
    full_name: str
    default_branch: str = ""


class _Ref(_Loose):
    sha: str
    ref: str
    repo: _Repo | None = None


class _PullRequest(_Loose):
    number: int
    draft: bool | None = False
    head: _Ref
    base: _Ref


class _PullRequestPayload(_Loose):
    action: str
    number: int
    pull_request: _PullRequest
    repository: _Repo
    sender: _User


class _Issue(_Loose):
    number: int
    pull_request: dict[str, Any] | None = None


class _Comment(_Loose):
    id: int
    body: str | None = ""
    author_association: str = "NONE"
    user: _User


class _IssueCommentPayload(_Loose):
    action: str
    issue: _Issue
    comment: _Comment
    repository: _Repo
    sender: _User


_M = TypeVar("_M", bound=_Loose)


def _lenient(model: type[_M], payload: Mapping[str, Any], name: str) -> _M:
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise EventError(f"cannot read the {name} event payload: {first.get('msg')} at {where}") from None
