"""The folder digest (app/adr_review/pipeline/keys.py): the past ADRs a review read, as one key part. Equal
folders give equal digests whatever order the API listed them in; any other folder another one."""

from __future__ import annotations

import pytest

from adr_review.pipeline.keys import folder_digest

FOLDER = [("docs/adr/0001-kafka.md", "b1"), ("docs/adr/0002-pg.md", "b2"), ("docs/adr/0003-redis.md", "b3")]


@pytest.mark.parametrize(
    ("other", "same"),
    [
        (list(reversed(FOLDER)), True),  # the listing order is not the folder
        ([FOLDER[1], FOLDER[2], FOLDER[0]], True),
        ([*FOLDER[:2], ("docs/adr/0003-redis.md", "b4")], False),  # one file's contents changed
        ([*FOLDER[:2], ("docs/adr/0003-valkey.md", "b3")], False),  # one file renamed
        (FOLDER[:2], False),  # one file gone
        ([*FOLDER, ("docs/adr/0004-s3.md", "b5")], False),  # one file added
        (
            [("docs/adr/0001-kafka.md", "b2"), ("docs/adr/0002-pg.md", "b1"), FOLDER[2]],
            False,
        ),  # blobs swapped
    ],
)
def test_the_folder_digest_is_the_set_of_files_not_their_order(
    other: list[tuple[str, str]], same: bool
) -> None:
    assert (folder_digest(other) == folder_digest(FOLDER)) is same
