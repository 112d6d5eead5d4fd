"""Which GitHub event leads to what: the decision table of the Action and the App, as pure functions.

Events arrive here as plain dataclasses (app/adr_review/core/events.py reads the webhook payloads into
them), so the whole policy -- PR actions, drafts, bots, comment commands, who may run them, fork PRs,
which changed files are ADRs -- is testable against real payloads without GitHub or an SDK.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from adr_review.core.adr_paths import MARKDOWN_SUFFIXES, is_markdown
from adr_review.core.commands import (
    ALL_STAGES,
    ALLOWED_ASSOCIATIONS,
    ALLOWED_PERMISSIONS,
    DENIED_TEXT,
    DISMISS_USAGE,
    HELP_TEXT,
    UNKNOWN_TEXT,
    Command,
    is_authorized,
    parse_command,
)
from adr_review.core.feedback_boxes import tick_changes
from adr_review.core.marker import read_marker

# --------------------------------------------------------------------------------------------------
# Events (what the adapters produce)

PR_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
REINDEX_EVENTS = frozenset({"schedule", "workflow_dispatch"})


@dataclass(frozen=True)
class Actor:
    login: str
    type: str  # "User" | "Bot" | "Organization" | "Mannequin"

    @property
    def is_bot(self) -> bool:
        return self.type == "Bot" or self.login.endswith("[bot]")


@dataclass(frozen=True)
class PullRequestEvent:
    event_name: str  # "pull_request" | "pull_request_target"
    action: str
    repo: str  # "owner/name" of the base repository
    number: int
    draft: bool
    head_sha: str
    base_sha: str
    base_ref: str
    head_repo: str | None  # None when the fork was deleted
    sender: Actor
    default_branch: str
    title: str = ""
    labels: tuple[str, ...] = ()

    @property
    def is_fork(self) -> bool:
        return is_fork(self.repo, self.head_repo)


@dataclass(frozen=True)
class CommentEvent:
    action: str  # "created" | "edited" | "deleted"
    repo: str
    number: int  # the issue / PR number
    on_pull_request: bool  # `issue.pull_request` is present
    comment_id: int
    body: str
    author_association: str
    sender: Actor
    default_branch: str
    previous_body: str | None = None  # `edited`: the body before the edit (changes.body.from)


@dataclass(frozen=True)
class ReindexEvent:
    event_name: str  # "schedule" | "workflow_dispatch"
    repo: str
    default_branch: str


@dataclass(frozen=True)
class OtherEvent:
    event_name: str
    action: str | None = None


Event = PullRequestEvent | CommentEvent | ReindexEvent | OtherEvent


def is_fork(base_repo: str, head_repo: str | None) -> bool:
    """A PR whose head lives in another repository (or in a deleted one) is a fork PR."""
    return head_repo is None or head_repo.casefold() != base_repo.casefold()


# --------------------------------------------------------------------------------------------------
# Decisions

DecisionKind = Literal["review", "reindex", "help", "deny", "ignore", "dismiss", "feedback"]


@dataclass(frozen=True)
class Decision:
    """What to do with one event. `summary` is the one line the run prints whatever happens."""

    kind: DecisionKind
    summary: str
    stages: frozenset[str] = ALL_STAGES
    forced: bool = False  # a comment command: new run key, same comment
    react: bool = False  # react to the command comment: 👀 accepted, 😕 denied
    reply: str | None = None  # post this as a (new, separate) reply comment
    read_only: bool = False  # fork PR on `pull_request`: read-only token, no secrets -> no comment
    needs_permission_check: bool = False  # association not enough: ask the API for the permission
    only_paths: frozenset[str] = frozenset()  # a command naming ADRs: review only those
    finding_id: str | None = None  # dismiss: the finding
    reason: str = ""  # dismiss: why
    ticks: tuple[tuple[str, bool], ...] = ()  # feedback: the Adopted boxes an edit changed (id, ticked)
    guard_only: bool = False  # `/adr-review check`: the guard on this PR's code, no ADR review


def screen(event: Event) -> Decision | None:
    """Cheap first pass that needs no API call: an `ignore` decision, or None to go on with `decide`."""
    if isinstance(event, OtherEvent):
        suffix = f".{event.action}" if event.action else ""
        return Decision(
            "ignore", f"adr-review: event {event.event_name}{suffix} is not handled; nothing to do."
        )
    if isinstance(event, ReindexEvent):
        return None
    if event.sender.is_bot:
        return Decision("ignore", f"adr-review: sender {event.sender.login} is a bot; nothing to do.")
    if isinstance(event, PullRequestEvent):
        if event.action not in PR_ACTIONS:
            return Decision(
                "ignore", f"adr-review: pull_request.{event.action} is not reviewed; nothing to do."
            )
        return None
    if event.action == "edited" and event.on_pull_request and read_marker(event.body) is not None:
        return None  # an edit of one of our comments: a reviewer may have ticked a box (decide)
    if event.action != "created":
        return Decision("ignore", f"adr-review: issue_comment.{event.action} is not handled; nothing to do.")
    if not event.on_pull_request:
        return Decision(
            "ignore", f"adr-review: #{event.number} is an issue, not a pull request; nothing to do."
        )
    if parse_command(event.body) is None:
        return Decision("ignore", "adr-review: the comment is not an /adr-review command; nothing to do.")
    return None


def decide(event: Event, *, review_drafts: bool = False, permission: str | None = None) -> Decision:
    """The full decision. `permission` is the commenter's repository permission when it was looked up."""
    first = screen(event)
    if first is not None:
        return first
    return decide_screened(event, review_drafts=review_drafts, permission=permission)


def decide_screened(event: Event, *, review_drafts: bool = False, permission: str | None = None) -> Decision:
    """The decision of an event `screen` let through (the plan calls it with the one screen's verdict
    in hand: the webhook's, or its own), so the screen runs once per delivery."""
    if isinstance(event, OtherEvent):
        raise ValueError(f"{event.event_name}: decide_screened on an event the screen drops")
    if isinstance(event, ReindexEvent):
        return Decision(
            "reindex", f"adr-review: re-indexing the ADRs of {event.repo}@{event.default_branch}."
        )
    if isinstance(event, PullRequestEvent):
        if event.draft and not review_drafts:
            return Decision(
                "ignore",
                f"adr-review: #{event.number} is a draft; drafts are skipped (set review_drafts: true).",
            )
        read_only = event.event_name == "pull_request" and event.is_fork
        summary = f"adr-review: reviewing the ADRs changed by #{event.number} ({event.action})."
        if read_only:
            summary += " Fork PR: read-only token, so the report goes to the job summary only."
        return Decision("review", summary, read_only=read_only)
    assert isinstance(event, CommentEvent)
    if event.action == "edited":
        return _edited(event, permission)
    command = parse_command(event.body)
    assert command is not None  # screen() let it through
    if command.kind == "help":
        return Decision("help", "adr-review: posted the command help.", react=True, reply=HELP_TEXT)
    if not is_authorized(event.author_association, permission):
        if permission is None and event.author_association.upper() not in ALLOWED_ASSOCIATIONS:
            return Decision(
                "deny",
                f"adr-review: {event.sender.login} ({event.author_association}) is not a collaborator.",
                needs_permission_check=True,
            )
        return Decision(
            "deny",
            f"adr-review: {event.sender.login} ({event.author_association}) may not run commands; nothing run.",
            react=True,  # 😕, and the reply once per user and PR (app/adr_review/pipeline/plans/carry_out.py::respond)
            reply=DENIED_TEXT.format(login=event.sender.login),
        )
    if command.kind == "dismiss":
        if command.finding_id is None:
            return Decision(
                "help", "adr-review: dismiss without a finding id; posted the help.", reply=DISMISS_USAGE
            )
        return Decision(
            "dismiss",
            f"adr-review: {event.sender.login} dismissed finding {command.finding_id} on #{event.number}.",
            finding_id=command.finding_id,
            reason=command.reason,
        )
    if command.kind == "check":
        return Decision(
            "review",
            f"adr-review: {command.raw} by {event.sender.login} on #{event.number}: running the ADR guard.",
            stages=frozenset(),
            forced=True,
            react=True,
            guard_only=True,
        )
    if command.kind == "unknown":
        return Decision(
            "help",
            f"adr-review: unknown command {command.raw!r}; posted the help.",
            react=False,
            reply=UNKNOWN_TEXT.format(raw=command.raw.replace("`", "'")),
        )
    return Decision(
        "review",
        f"adr-review: {command.raw} by {event.sender.login} on #{event.number}: re-running {_stages(command)}.",
        stages=command.stages,
        forced=True,
        react=True,
        only_paths=frozenset(command.paths),
    )


def _edited(event: CommentEvent, permission: str | None) -> Decision:
    """An edit of our comment: the Adopted boxes it changed count when the editor has write access
    (the comment's `author_association` is ours, so only the looked-up permission says who edited)."""
    ticks = tuple(sorted(tick_changes(event.previous_body or "", event.body).items()))
    if not ticks:
        return Decision("ignore", "adr-review: the edit changed no Adopted box; nothing to do.")
    if permission is None:
        return Decision("feedback", "adr-review: checking who edited.", needs_permission_check=True)
    if permission.casefold() not in ALLOWED_PERMISSIONS:
        return Decision(
            "ignore",
            f"adr-review: {event.sender.login} ({permission}) has no write access; edit not counted.",
        )
    on = sum(1 for _, t in ticks if t)
    return Decision(
        "feedback",
        f"adr-review: {event.sender.login} ticked {on} and unticked {len(ticks) - on} Adopted box(es) on #{event.number}.",
        ticks=ticks,
    )


def _stages(command: Command) -> str:
    return " and ".join(sorted(command.stages)) or "nothing"


# --------------------------------------------------------------------------------------------------
# Which changed files are ADRs


@dataclass(frozen=True)
class ChangedFile:
    path: str
    status: str  # added | modified | removed | renamed | copied | changed | unchanged
    previous_path: str | None = None
    blob_sha: str | None = None


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob as a regex: `**` spans directories (also none), `*` and `?` stay inside one segment.

    `docs/adr/**` matches everything below docs/adr; `docs/adr` alone means the same (a folder);
    `**/adr/*.md` matches an adr folder at any depth.
    """
    pat = pattern.strip().lstrip("/")
    if pat.startswith("./"):
        pat = pat[2:]
    if pat and not any(c in pat for c in "*?[") and not pat.endswith(MARKDOWN_SUFFIXES):
        pat = pat.rstrip("/") + "/**"  # a bare folder
    out: list[str] = []
    i = 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pat.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pat[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches_any(path: str, globs: Iterable[str]) -> bool:
    return any(glob_regex(g).match(path) for g in globs)


def select_adrs(
    paths: Iterable[str], globs: Sequence[str], *, accept: Callable[[str], bool] = lambda _p: True
) -> list[str]:
    """Markdown files under the ADR globs that `accept` (e.g. not a README or template), sorted, unique."""
    return sorted({p for p in paths if is_markdown(p) and matches_any(p, globs) and accept(p)})


def changed_adrs(
    files: Iterable[ChangedFile], globs: Sequence[str], *, accept: Callable[[str], bool] = lambda _p: True
) -> list[ChangedFile]:
    """The changed files that are ADRs and still exist at the head (a deleted ADR has nothing to review)."""
    keep = []
    for f in files:
        if f.status == "removed":
            continue
        if is_markdown(f.path) and matches_any(f.path, globs) and accept(f.path):
            keep.append(f)
    return sorted(keep, key=lambda f: f.path)


def adr_glob_roots(globs: Iterable[str]) -> list[str]:
    """The fixed folder prefix of each glob (`docs/adr/**` -> `docs/adr`): where to look for ADRs."""
    roots = set()
    for g in globs:
        parts = []
        for part in g.strip().lstrip("/").split("/"):
            if any(c in part for c in "*?["):
                break
            parts.append(part)
        roots.add(posixpath.join(*parts) if parts else "")
    return sorted(roots)


def no_adr_summary(number: int, changed_count: int, globs: Sequence[str]) -> str:
    return (
        f"adr-review: #{number} changes {changed_count} file(s), none of them an ADR "
        f"(globs: {', '.join(globs)}); nothing to do."
    )
