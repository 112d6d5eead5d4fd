"""What the state store holds of reviewers' feedback (issue 17), as the report reads it: one record per
reviewed ADR of a PR and one per finding shown. Pure records; the store fills them (app/adr_review/adapters/
feedback_sql.py) from comment ledgers, ticks and dismiss commands (app/adr_review/core/feedback.py).

The guard comment's records (issue 28) are kept the same way under its marker path, GUARD_MARKER_PATH
(app/adr_review/core/comments.py): `guard` says a record is the guard's (an answer of its model check,
with the verdict as `severity` and the ADR's id and title as `title`), which the report counts apart."""

from __future__ import annotations

from dataclasses import dataclass

from adr_review.core.comments import GUARD_MARKER_PATH


@dataclass(frozen=True)
class AdrOutcome:
    repo: str
    pr: int
    path: str
    first_at: float  # unix time the store first saw a review of it
    last_at: float
    revisions: int  # contents of the ADR reviewed in this PR
    revised: bool  # changed in a later push after findings were shown (the sunset rule's signal)
    cost_usd: float  # what its reviews cost, all revisions

    @property
    def guard(self) -> bool:
        """The record of the PR's guard comment, not of an ADR's review."""
        return self.path == GUARD_MARKER_PATH


@dataclass(frozen=True)
class FindingOutcome:
    repo: str
    pr: int
    path: str
    finding_id: str
    severity: str
    perspective: str  # the Devil's Advocate perspective, else the critic (and pre-mortem category)
    title: str
    shown_at: float
    adopted: bool = False
    adopted_by: str | None = None  # None: read from the comment's box (the Action), not from an edit
    dismissed: bool = False
    dismissed_by: str | None = None
    reason: str = ""

    @property
    def guard(self) -> bool:
        """A guard answer (its comment's marker path), not a blind-spot finding."""
        return self.path == GUARD_MARKER_PATH
