"""GitHub event payloads -> the plain event dataclasses of app/core/triggers.py.

One reader: small pydantic models that name only the fields the decision uses (`extra="ignore"`, a
default wherever GitHub leaves a field out or sends null). GitHub adds fields to its payloads all the
time and old deliveries lack the new ones; a typed model of the whole schema (githubkit's, dropped)
rejected 13 of the 14 recorded `pull_request` payloads over label fields nothing here reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.core.triggers import (
    REINDEX_EVENTS,
    Actor,
    CommentEvent,
    Event,
    OtherEvent,
    PullRequestEvent,
    ReindexEvent,
)

PR_EVENTS = frozenset({"pull_request", "pull_request_target"})


class EventError(ValueError):
    """A payload that cannot be read: not JSON, or a field the decision needs is missing or mistyped."""


def parse_event(name: str, payload: Mapping[str, Any], *, repo_hint: str = "") -> Event:
    """One event. `repo_hint` ($GITHUB_REPOSITORY) fills in the repo for payloads without one (schedule)."""
    if name in PR_EVENTS:
        return _pull_request(name, payload)
    if name == "issue_comment":
        return _issue_comment(payload)
    if name in REINDEX_EVENTS:
        return _reindex(name, payload, repo_hint)
    return OtherEvent(event_name=name, action=_str(payload.get("action")) or None)


def _pull_request(name: str, payload: Mapping[str, Any]) -> PullRequestEvent:
    """`pull_request_target` has the payload of `pull_request`."""
    data = _read(_PullRequestPayload, payload, name)
    pr = data.pull_request
    return PullRequestEvent(
        event_name=name,
        action=data.action,
        repo=data.repository.full_name,
        number=data.number,
        draft=bool(pr.draft),
        head_sha=pr.head.sha,
        base_sha=pr.base.sha,
        base_ref=pr.base.ref,
        head_repo=pr.head.repo.full_name if pr.head.repo else None,  # None: the fork was deleted
        sender=Actor(data.sender.login, data.sender.type),
        default_branch=data.repository.default_branch,
        title=pr.title or "",
        labels=tuple(label.name for label in pr.labels or () if label.name),
    )


def _issue_comment(payload: Mapping[str, Any]) -> CommentEvent:
    data = _read(_IssueCommentPayload, payload, "issue_comment")
    return CommentEvent(
        action=data.action,
        repo=data.repository.full_name,
        number=data.issue.number,
        on_pull_request=data.issue.pull_request is not None,
        comment_id=data.comment.id,
        body=data.comment.body or "",
        author_association=data.comment.author_association,
        sender=Actor(data.sender.login, data.sender.type),
        default_branch=data.repository.default_branch,
        previous_body=data.changes.body.from_ if data.changes and data.changes.body else None,
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


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


# --------------------------------------------------------------------------------------------------
# The payload models: only what the decision reads; everything else is ignored.


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


class _Label(_Loose):
    name: str = ""


class _PullRequest(_Loose):
    draft: bool | None = False
    head: _Ref
    base: _Ref
    title: str | None = ""
    labels: list[_Label] | None = None


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


class _BodyChange(_Loose):
    from_: str | None = Field(default=None, alias="from")


class _Changes(_Loose):
    body: _BodyChange | None = None


class _IssueCommentPayload(_Loose):
    action: str
    issue: _Issue
    comment: _Comment
    repository: _Repo
    sender: _User
    changes: _Changes | None = None  # `edited`: what the edit changed


_M = TypeVar("_M", bound=_Loose)


def _read(model: type[_M], payload: Mapping[str, Any], name: str) -> _M:
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise EventError(f"cannot read the {name} event payload: {first.get('msg')} at {where}") from None
