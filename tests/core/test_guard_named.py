"""Which ADRs a pull request names (app/adr_review/core/guard_named.py): read by the ADR parser's link
finder, so a mention counts exactly when it would count in an ADR."""

from __future__ import annotations

import pytest

from adr_review.core.adr import parse_adr
from adr_review.core.guard_named import MAX_NAMING_LINE, MAX_NAMING_LINES, named_in, named_in_diff

FOLDER = [
    parse_adr(
        "0012-store.md", b"# ADR-0012: Store\n\n## Status\n\nAccepted\n\n## Decision\n\nUse PostgreSQL.\n"
    ),
    parse_adr("0013-queue.md", b"# 13. Queue\n\n## Status\n\nAccepted\n\n## Decision\n\nUse RabbitMQ.\n"),
    parse_adr("20260312-01-cache.md", b"# ADR-20260312-01: Cache\n\n## Status\n\nAccepted\n"),
]


@pytest.mark.parametrize(
    ("title", "body", "named"),
    [
        ("ADR-12: move the store", "", ("0012-store.md",)),  # a title that starts with the id names it
        ("Implements adr 13", "", ("0013-queue.md",)),  # case and padding do not matter
        ("Refactor", "See [the queue decision](docs/adr/0013-queue.md).", ("0013-queue.md",)),
        ("Refactor", "Per ADR-0013 and ADR-12.", ("0012-store.md", "0013-queue.md")),  # folder order
        ("Cache keys", "ADR-20260312-01 asks for it", ("20260312-01-cache.md",)),
        ("Bump MADR 12.0.0", "", ()),  # a version number
        ("Refactor", "`ADR-12` is only a string here", ()),  # a code span
        ("Refactor", "```\nADR-13\n```", ()),  # a code block
        ("Refactor", "ADR-99 does not exist", ()),
        ("", "", ()),
    ],
)
def test_what_the_pr_names(title: str, body: str, named: tuple[str, ...]) -> None:
    assert named_in(title, body, FOLDER) == named  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("added", "named"),
    [
        (["AUDIT_DAYS = 90  # shorter than ADR-0012 allows"], ("0012-store.md",)),  # a code comment
        (["        // see adr 13"], ("0013-queue.md",)),  # indented code is read, not taken for a code block
        (["See [the queue](../docs/adr/0013-queue.md)."], ("0013-queue.md",)),  # a changed README's link
        (["# ADR-13", "x = 1", "// ADR-12"], ("0012-store.md", "0013-queue.md")),  # folder order
        (["x = 1", "return nil"], ()),
        (['version = "MADR 12.0.0"'], ()),  # a version number
        (["Wrap `ADR-12` in a code span"], ()),
        (["ADR-99 is not in the folder"], ()),
        ([], ()),
    ],
)
def test_what_the_added_lines_name(added: list[str], named: tuple[str, ...]) -> None:
    assert named_in_diff(added, FOLDER) == named  # type: ignore[arg-type]


def test_a_diff_of_many_naming_lines_reads_a_bounded_number() -> None:
    lines = ["// ADR-99"] * MAX_NAMING_LINES + ["// ADR-12"]  # past the bound: not read
    assert named_in_diff(lines, FOLDER) == ()  # type: ignore[arg-type]
    assert named_in_diff(lines[1:], FOLDER) == ("0012-store.md",)  # type: ignore[arg-type]


def test_a_name_past_a_lines_bound_is_not_read() -> None:
    long = ("a " * MAX_NAMING_LINE)[: MAX_NAMING_LINE - len("ADR-12")] + "ADR-12"
    assert len(long) == MAX_NAMING_LINE
    assert named_in_diff([long], FOLDER) == ("0012-store.md",)  # type: ignore[arg-type]
    assert named_in_diff(["a " + long], FOLDER) == ()  # type: ignore[arg-type]
