"""Publishing one ADR's review: the half of app/adr_review/pipeline/plans/pr.py::run_target that writes, for the Action
and the App, with the rules that keep one right comment per ADR under races (issue 16):

already_published  our comment's marker carries this run key: nothing to do, nothing recomputed.
stored_render      this run's `render` checkpoint, when it has one: that body is posted and nothing
                   upstream runs again (a stage that had degraded, e.g. a failed critic, is not paid
                   for a second time after a crash).
publish            the `comment` stage. Under the (repo, PR, ADR) comment lock (the store's, so runs on
                   any host take turns): our comment (written by these credentials' identity, never
                   somebody else's that carries a marker) -> a marker naming a newer head: leave it, this
                   run is superseded -> the same text as ours (the marker line aside): leave it, no edit
                   noise, and the marker is then *not* refreshed (it keeps the key and head of the run
                   that wrote the text) -> still current? (right before the write: a run cancelled
                   meanwhile publishes nothing) -> edit it, or create ours when there is none or the
                   edit is refused.
The marker written is the review's with the target's head SHA and push order (app/adr_review/core/marker.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from adr_review.core.comments import upsert_step
from adr_review.core.feedback import revision_of, stamped, without_ledger
from adr_review.core.feedback_boxes import read_ticks, rename_boxes
from adr_review.core.finding_identity import shown_ids, signature
from adr_review.core.marker import Marker, with_marker, without_marker
from adr_review.core.render import render_comment
from adr_review.core.results import Review
from adr_review.core.serde import review_from_dict, to_dict
from adr_review.pipeline.locks import LockFactory
from adr_review.pipeline.plans.budget import month_of
from adr_review.pipeline.plans.targets import Target
from adr_review.pipeline.ports import GitHubError, GitHubPort, RepoComment, StageMemo
from adr_review.pipeline.reporting.feedback import record_body
from adr_review.pipeline.state_ports import CheckpointStore, FeedbackLog

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Published:
    path: str
    result: str  # created | edited | unchanged | superseded | not-posted | failed
    url: str = ""
    review: Review | None = None
    body: str = ""
    error: str | None = None
    # fresh finding id -> the id the comment shows it under (a finding it showed before keeps its id)
    ids: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Rendered:
    body: str  # as render_comment wrote it; the marker is stamped at publication
    review: Review


class Superseded(Exception):
    """The comment already shows the review of a newer head: this run must not overwrite it."""


class PublishDeps(Protocol):
    """What publishing reads of the run's dependencies (pr.RunDeps has these fields)."""

    @property
    def gh(self) -> GitHubPort: ...

    @property
    def writes(self) -> bool: ...

    @property
    def still_current(self) -> Callable[[], None]: ...

    @property
    def comment_lock(self) -> LockFactory: ...

    @property
    def push_order(self) -> int | None: ...

    @property
    def checkpoints(self) -> CheckpointStore | None: ...

    @property
    def feedback(self) -> FeedbackLog | None: ...

    @property
    def feedback_from_boxes(self) -> bool: ...


def comment_lock_name(repo: str, pr: int, path: str) -> str:
    return f"comment:{repo}#{pr}:{path}"


def already_published(target: Target, deps: PublishDeps, memo: StageMemo) -> Published | None:
    """Our comment for this ADR already carries this run key: the audit trail records the comment stage
    as satisfied (not written) and nothing is reviewed."""
    if not deps.writes:
        return None
    existing = deps.gh.find_comment(target.repo, target.pr, target.adr_path)
    if existing is None or existing.marker_key != target.run_key:
        return None
    log.info("comment_up_to_date", extra={"run_key": target.run_key, "path": target.adr_path})
    _record(deps, target, existing.body)  # the boxes as reviewers left them (the Action's next run)
    found = {"comment_id": existing.id, "created": False, "html_url": existing.html_url}
    memo("comment", lambda: {**found, "up_to_date": True})
    return Published(target.adr_path, "unchanged", existing.html_url)


def stored_render(target: Target, deps: PublishDeps, memo: StageMemo) -> Rendered | None:
    """This run's render checkpoint (a resumed run), reused through the memo so the skip is recorded;
    None when there is none (the review runs)."""
    if deps.checkpoints is None or deps.checkpoints.get(target.run_key, "render") is None:
        return None
    data = memo("render", _unreachable)
    return Rendered(str(data["body"]), review_from_dict(data["review"]))


def _unreachable() -> dict[str, Any]:  # pragma: no cover - the checkpoint exists
    raise RuntimeError("the render checkpoint disappeared")


def render(review: Review, link_base: str, memo: StageMemo) -> Rendered:
    """The `render` stage: the comment body, checkpointed with the review it shows."""
    data = memo(
        "render", lambda: {"body": render_comment(review, link_base=link_base), "review": to_dict(review)}
    )
    return Rendered(str(data["body"]), review)


def publish(target: Target, rendered: Rendered, deps: PublishDeps, memo: StageMemo) -> Published:
    """The `comment` stage (see the module doc). GitHubError propagates; a run that is not current any
    more raises the caller's `still_current` error; a newer head's comment -> result "superseded"."""
    path = target.adr_path
    deps.still_current()  # superseded while reviewing: do not even queue for the lock
    if not deps.writes:
        return Published(path, "not-posted", review=rendered.review, body=rendered.body)
    gh, order = deps.gh, deps.push_order
    body = with_marker(rendered.body, Marker(path, target.run_key, target.head_sha or None, order))
    written: list[tuple[str, Mapping[str, str]]] = []

    def post() -> dict[str, Any]:
        with deps.comment_lock(comment_lock_name(target.repo, target.pr, path)):
            existing = gh.find_comment(target.repo, target.pr, path)
            if existing is not None and _marker(existing).newer_than(target.head_sha, order):
                raise Superseded(
                    f"{path}: the comment shows the review of {existing.marker_head}, pushed after "
                    f"{target.head_sha[:12]}; left as it is"
                )
            final, ids = stamp_feedback(body, target, rendered.review, existing.body if existing else None)
            written.append((final, ids))
            if existing is not None and _same_text(existing.body, final, rendered.review):
                return _posted(existing, created=False, unchanged=True)
            deps.still_current()  # right before the write: a run cancelled meanwhile writes nothing
            comment, created = write_comment(gh, target.repo, target.pr, existing, final)
            return _posted(comment, created=created)

    try:
        posted = memo("comment", post)
    except Superseded as exc:
        log.info("comment_superseded", extra={"run_key": target.run_key, "why": str(exc)})
        return Published(path, "superseded", review=rendered.review, body=body, error=str(exc))
    ids: Mapping[str, str] = {}
    if written:
        body, ids = written[-1]
        _record(deps, target, body)
    result = "unchanged" if posted.get("unchanged") else "created" if posted.get("created") else "edited"
    return Published(path, result, str(posted.get("html_url") or ""), rendered.review, body, ids=ids)


def upsert_comment(gh: GitHubPort, repo: str, number: int, path: str, body: str) -> tuple[RepoComment, bool]:
    """Our comment for `path` (a marker path) edited to `body`, or created: (the comment, created)."""
    return write_comment(gh, repo, number, gh.find_comment(repo, number, path), body)


def write_comment(
    gh: GitHubPort, repo: str, number: int, ours: RepoComment | None, body: str
) -> tuple[RepoComment, bool]:
    """Edit `ours`, or create a comment when there is none or GitHub refuses the edit
    (app/adr_review/core/comments.py: upsert_step); any other failure propagates."""
    if upsert_step(ours) == "edit":
        assert ours is not None
        try:
            return gh.edit_comment(repo, number, ours.id, body), False
        except GitHubError as exc:
            if upsert_step(ours, edit_failed=True, status=exc.status) == "stop":
                raise
            log.warning("comment_edit_refused", extra={"comment": ours.id, "error": str(exc)})
    return gh.create_comment(repo, number, body), True


def stamp_feedback(
    body: str, target: Target, review: Review, previous: str | None
) -> tuple[str, Mapping[str, str]]:
    """The body as published: the findings the previous comment showed (maybe in other words) under
    their ids, its ticks carried over, and its ledger with this review's revision added (what the body
    shows, what it cost, under which run); and each finding's fresh id -> the id it is shown under."""
    findings = review.blindspots.findings if review.blindspots else ()
    ids = shown_ids(target.adr_path, findings, previous)  # a finding shown before keeps its id
    body = rename_boxes(body, ids)
    rev = revision_of(
        target.content_sha256,
        tuple(ids.values()),  # in the findings' order
        findings,
        [signature(f) for f in findings],
        review.meta.usage.cost_usd,
        target.run_key,
        read_ticks(body),
    )
    return stamped(body, rev, previous, month_of(time.time())), ids  # its cost, booked to this month


def _same_text(old: str, new: str, review: Review) -> bool:
    """What a reader sees is unchanged, and the ledger gains nothing worth an edit (this run cost
    nothing: its answers were reused): no edit noise, the marker and ledger are left as they are."""
    if without_marker(old) == without_marker(new):
        return True
    return review.meta.usage.cost_usd == 0 and without_ledger(without_marker(old)) == without_ledger(
        without_marker(new)
    )


def _record(deps: PublishDeps, target: Target, body: str) -> None:
    if deps.feedback is not None:
        record_quietly(
            deps.feedback, target.repo, target.pr, target.adr_path, body, boxes=deps.feedback_from_boxes
        )


def record_quietly(store: FeedbackLog, repo: str, pr: int, path: str, body: str, *, boxes: bool) -> None:
    """A comment of ours (an ADR's, or the guard's: `path` its marker path), its ledger and boxes into
    the state store; a store that fails here costs the report one record, never the comment."""
    try:
        record_body(store, repo, pr, path, body, boxes=boxes)
    except Exception as exc:  # noqa: BLE001 - any store error: logged, the comment stands
        log.warning("feedback_not_recorded", extra={"path": path, "error": str(exc)})


def _posted(comment: RepoComment, *, created: bool, unchanged: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"comment_id": comment.id, "created": created, "html_url": comment.html_url}
    if unchanged:
        out["unchanged"] = True  # same text: not edited, the marker not refreshed
    return out


def _marker(c: RepoComment) -> Marker:
    return Marker(c.marker_path or "", c.marker_key or "", c.marker_head, c.marker_order)


__all__ = [
    "Published",
    "PublishDeps",
    "Rendered",
    "Superseded",
    "already_published",
    "comment_lock_name",
    "publish",
    "record_quietly",
    "render",
    "stamp_feedback",
    "stored_render",
    "upsert_comment",
    "write_comment",
]
