"""The comment rules, written once: which PR comment is ours, and what an upsert does next (edit ours,
create one, or stop). Pure: the GitHub adapter, the publish step and the test fakes make the calls and
ask these functions what the answers mean, so the pipeline tests exercise the product's rule.

Ours = it carries our marker for the ADR *and* these credentials wrote it: another bot's or a
collaborator's comment with a pasted marker is never ours (nobody can capture or block a review).
The newest of ours wins: after a refused edit we create a new comment, and that one we can edit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Protocol, TypeVar

# An edit GitHub will not make: not ours to edit (403), deleted (404), gone (410). A new comment of
# ours is created instead; any other failure stops the upsert (the caller reports or retries).
EDIT_REFUSED = frozenset({403, 404, 410})

Step = Literal["edit", "create", "stop"]

# The marker path of the PR's one guard comment (docs/guard.md): not a file path (it starts with `@`,
# which no ADR path a glob selects does), so it never names an ADR's review comment, and the same
# rules pick it: ours = this marker and these credentials, the newest wins.
GUARD_MARKER_PATH = "@guard"


def pick_guard_comment(comments: Iterable[C], me: str) -> C | None:
    """Our guard comment on the PR (the newest), or None."""
    return pick_comment(comments, GUARD_MARKER_PATH, me)


class MarkedComment(Protocol):
    @property
    def marker_path(self) -> str | None: ...

    @property
    def author(self) -> str: ...


C = TypeVar("C", bound=MarkedComment)


def is_ours(comment: MarkedComment, me: str) -> bool:
    return bool(comment.marker_path) and comment.author == me


def pick_comment(comments: Iterable[C], adr_path: str, me: str) -> C | None:
    """Our comment for this ADR: the newest that carries its marker and was written by `me`."""
    ours = [c for c in comments if c.marker_path == adr_path and is_ours(c, me)]
    return ours[-1] if ours else None


def ours_per_path(comments: Iterable[C], me: str) -> list[C]:
    """Our comment for each ADR path our markers name (the newest of each), in first-seen order."""
    newest: dict[str, C] = {}
    for c in comments:
        if c.marker_path and is_ours(c, me):
            newest[c.marker_path] = c  # a dict keeps the first-seen place, the newest value
    return list(newest.values())


def upsert_step(ours: MarkedComment | None, *, edit_failed: bool = False, status: int | None = None) -> Step:
    """What an upsert does next: edit ours; create one when there is none, or when the edit of ours
    failed with a refusal (`status` in EDIT_REFUSED); stop on any other failure (None: no answer)."""
    if ours is None:
        return "create"
    if not edit_failed:
        return "edit"
    return "create" if status in EDIT_REFUSED else "stop"
