"""GitHub event payloads -> the plain event dataclasses of app/adr_review/core/triggers.py: one reader, one field map.

The map names only the fields the decision reads; everything else in a payload is ignored (GitHub adds
fields all the time, old deliveries lack the new ones: a typed model of the whole schema rejected 13 of
the 14 recorded `pull_request` payloads over label fields nothing here reads). A field is required
(missing, null or mistyped -> the payload cannot be read) or has a default (missing or null -> it).

Two modes over the same map, so the webhook's acknowledgement and the plan run can never read a
delivery differently: `read_event` (the plan run, the Action) says what is wrong with a payload it
cannot read (EventError); `ack_event` (the webhook, within GitHub's 10 s) never raises, and an
unreadable payload is an OtherEvent the screen ignores. I/O-free: the callers read the bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from adr_review.core.triggers import (
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
    """A payload that cannot be read: a field the decision needs is missing or mistyped."""


_MISSING = object()


@dataclass(frozen=True)
class Field:
    """One field of an event: where it sits in the payload, its type, and its default (none: required)."""

    path: tuple[str, ...]
    kind: type = str
    default: Any = _MISSING
    convert: Callable[[Any], Any] | None = None  # the value as the event holds it (its type unchecked)

    @property
    def required(self) -> bool:
        return self.default is _MISSING


def _label_names(value: Any) -> tuple[str, ...]:
    labels = value if isinstance(value, list) else []
    return tuple(
        n for label in labels if isinstance(label, Mapping) and isinstance(n := label.get("name"), str) and n
    )


def _is_present(value: Any) -> bool:
    return isinstance(value, dict)


SENDER = {
    "sender_login": Field(("sender", "login")),
    "sender_type": Field(("sender", "type"), default="User"),
}
PULL_REQUEST: Mapping[str, Field] = {
    "action": Field(("action",)),
    "repo": Field(("repository", "full_name")),
    "default_branch": Field(("repository", "default_branch"), default=""),
    "number": Field(("number",), int),
    "draft": Field(("pull_request", "draft"), bool, default=False),
    "head_sha": Field(("pull_request", "head", "sha")),
    "base_sha": Field(("pull_request", "base", "sha")),
    "base_ref": Field(("pull_request", "base", "ref")),
    "head_repo": Field(("pull_request", "head", "repo", "full_name"), default=None),  # None: fork deleted
    "title": Field(("pull_request", "title"), default=""),
    "labels": Field(("pull_request", "labels"), default=(), convert=_label_names),
    **SENDER,
}
ISSUE_COMMENT: Mapping[str, Field] = {
    "action": Field(("action",)),
    "repo": Field(("repository", "full_name")),
    "default_branch": Field(("repository", "default_branch"), default=""),
    "number": Field(("issue", "number"), int),
    "on_pull_request": Field(("issue", "pull_request"), default=False, convert=_is_present),
    "comment_id": Field(("comment", "id"), int),
    "body": Field(("comment", "body"), default=""),
    "author_association": Field(("comment", "author_association"), default="NONE"),
    "previous_body": Field(("changes", "body", "from"), default=None),  # `edited`: the body before
    **SENDER,
}
FIELDS: Mapping[str, Mapping[str, Field]] = {
    "pull_request": PULL_REQUEST,
    "pull_request_target": PULL_REQUEST,  # the payload of `pull_request`
    "issue_comment": ISSUE_COMMENT,
}


# What a delivery record stores of any event, handled or not (its queue rows name them).
DELIVERY: Mapping[str, Field] = {
    "installation_id": Field(("installation", "id"), int, default=None),
    "repo": Field(("repository", "full_name"), default=None),
    "action": Field(("action",), default=None),
}


def delivery_facts(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The installation, repository and action of any payload (None where it has none)."""
    return {key: None if (v := _value(payload, spec)) == "" else v for key, spec in DELIVERY.items()}


def read_event(name: str, payload: Mapping[str, Any], *, repo_hint: str = "") -> Event:
    """One event; EventError names the first field that cannot be read. `repo_hint`
    ($GITHUB_REPOSITORY) fills in the repo for payloads without one (schedule)."""
    return _event(name, payload, repo_hint, strict=True)


def ack_event(name: str, payload: Mapping[str, Any]) -> Event:
    """The same reading for the webhook's acknowledgement: never raises (unreadable -> OtherEvent)."""
    return _event(name, payload, "", strict=False)


def _event(name: str, payload: Mapping[str, Any], repo_hint: str, *, strict: bool) -> Event:
    if name in REINDEX_EVENTS:
        return _reindex(name, payload, repo_hint)
    fields = FIELDS.get(name)
    values: dict[str, Any] = {}
    for key, spec in (fields or {}).items():
        value = _value(payload, spec)
        if value is _MISSING:  # a required field
            if strict:
                raise EventError(
                    f"cannot read the {name} event payload: {'.'.join(spec.path)} is missing or not "
                    f"a {spec.kind.__name__}"
                )
            fields = None
            break
        values[key] = value
    if fields is None:
        action = payload.get("action")
        return OtherEvent(name, action if isinstance(action, str) and action else None)
    sender = Actor(values.pop("sender_login"), values.pop("sender_type"))
    if name in PR_EVENTS:
        return PullRequestEvent(event_name=name, sender=sender, **values)
    return CommentEvent(sender=sender, **values)


def _value(payload: Mapping[str, Any], spec: Field) -> Any:
    node: Any = payload
    for key in spec.path:
        if not isinstance(node, dict) and not isinstance(node, Mapping):  # dict first: the fast path
            node = None
            break
        node = node.get(key)
    if node is None:
        return spec.default
    if spec.convert is not None:
        return spec.convert(node)
    if type(node) is not spec.kind and not (spec.kind is str and isinstance(node, str)):
        return _MISSING if spec.default is _MISSING else spec.default
    return node


def _reindex(name: str, payload: Mapping[str, Any], repo_hint: str) -> ReindexEvent:
    """`schedule` payloads carry only the cron line; the default branch may then be unknown ("")."""
    repo = payload.get("repository")
    if isinstance(repo, Mapping):
        full_name, branch = repo.get("full_name"), repo.get("default_branch")
        return ReindexEvent(
            event_name=name,
            repo=full_name if isinstance(full_name, str) and full_name else repo_hint,
            default_branch=branch if isinstance(branch, str) else "",
        )
    return ReindexEvent(event_name=name, repo=repo_hint, default_branch="")
