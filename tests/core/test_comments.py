"""The comment rules (app/adr_review/core/comments.py): the adapter, the publish step and the fakes all ask them."""

from __future__ import annotations

import pytest

from adr_review.core.comments import ours_per_path, pick_comment, upsert_step
from adr_review.pipeline.ports import RepoComment

ME = "adr-review[bot]"


def c(i: int, path: str | None, author: str, typ: str = "Bot", assoc: str = "NONE") -> RepoComment:
    return RepoComment(i, "", "", author, typ, assoc, marker_path=path, marker_key="k" if path else None)


COMMENTS = [
    c(1, "a.md", "other-app[bot]"),  # another bot pasting our marker
    c(2, "b.md", ME),
    c(3, "a.md", "alice", "User", "COLLABORATOR"),  # a collaborator pasting it
    c(4, "a.md", ME),
    c(5, None, ME),  # ours, but no marker: a reply without one is no ADR's comment
    c(6, "a.md", ME),  # created after an edit of 4 was refused
]


@pytest.mark.parametrize(
    ("comments", "path", "me", "expected"),
    [
        (COMMENTS, "a.md", ME, 6),  # the newest of ours
        (COMMENTS[:4], "a.md", ME, 4),
        (COMMENTS, "b.md", ME, 2),
        (COMMENTS, "z.md", ME, None),
        (COMMENTS[:4], "a.md", "someone-else[bot]", None),  # only the identity's own
        (COMMENTS[:3], "a.md", ME, None),  # markers by others never count
        (COMMENTS, "a.md", "alice", 3),  # for alice's credentials, alice's comment is hers
    ],
)
def test_pick_comment_takes_only_our_own_and_the_newest(
    comments: list[RepoComment], path: str, me: str, expected: int | None
) -> None:
    picked = pick_comment(comments, path, me)
    assert (picked.id if picked else None) == expected


def test_ours_per_path_is_the_newest_of_ours_for_each_path_in_first_seen_order() -> None:
    assert [x.id for x in ours_per_path(COMMENTS, ME)] == [2, 6]  # b.md was ours first
    assert ours_per_path(COMMENTS, "nobody") == []


@pytest.mark.parametrize(
    ("ours", "edit_failed", "status", "step"),
    [
        (None, False, None, "create"),  # none of ours: create
        (c(1, "a.md", ME), False, None, "edit"),  # ours: edit it
        (c(1, "a.md", ME), True, 403, "create"),  # not editable by us any more
        (c(1, "a.md", ME), True, 404, "create"),  # deleted
        (c(1, "a.md", ME), True, 410, "create"),  # gone
        (c(1, "a.md", ME), True, 422, "stop"),  # a real failure: never a second comment
        (c(1, "a.md", ME), True, 500, "stop"),
        (c(1, "a.md", ME), True, None, "stop"),  # no answer at all (the connection)
    ],
)
def test_upsert_step(ours: RepoComment | None, edit_failed: bool, status: int | None, step: str) -> None:
    assert upsert_step(ours, edit_failed=edit_failed, status=status) == step
