"""The Changelog's dated entries: the ADR's date, and its decision when the Status section was left at
proposed (hermes' ADR-010: "Proposed." under `## Status`, "28.06.2022: Accepted." in its Changelog)."""

from __future__ import annotations

import pytest

from adr_review.core.adr import parse_adr
from adr_review.core.adr.changelog import changelog_entries, logged_decision
from adr_review.core.adr.markdown import read_markdown


def _doc(changelog: str, status: str | None = "Proposed.", front: str = "") -> bytes:
    status_part = f"## Status\n\n{status}\n\n" if status is not None else ""
    return (
        f"{front}# ADR 010: Unified CLI arguments\n\n## Changelog\n{changelog}\n## Context\n\nFlags.\n\n"
        f"## Decision\n\nOnly long flags are used.\n\n{status_part}"
    ).encode()


HERMES = "* 15.06.2022: Proposed.\n* 28.06.2022: Accepted.\n"


@pytest.mark.parametrize(
    ("changelog", "status", "front", "expected", "raw"),
    [
        # The Status section was never moved on: the later logged decision stands.
        (HERMES, "Proposed.", "", "accepted", "Accepted."),
        # No Status section at all: the Changelog is the only statement.
        ("- 2022-06-28: Accepted by the core team\n", None, "", "accepted", "Accepted by the core team"),
        # Newest first: the latest by date, not the last written.
        ("* 2022-06-28: Accepted.\n* 2022-06-15: Proposed.\n", "Proposed", "", "accepted", "Accepted."),
        # The latest status logged is a proposal again: nothing to override.
        ("* 2022-06-15: Accepted.\n* 2022-07-01: Proposed.\n", "Proposed", "", "proposed", "Proposed"),
        # A Status section that says more than proposed stands over the log.
        ("* 2022-06-15: Proposed.\n* 2022-06-28: Accepted.\n", "Rejected", "", "rejected", "Rejected"),
        ("* 2020-01-04: First draft.\n", "Accepted", "", "accepted", "Accepted"),
        # Entries that mention a status word without being one.
        ("* 2024-03-25: Final updates before publishing\n", "Proposed", "", "proposed", "Proposed"),
        ("* 2022-12-18: Accepted proposal renamed to Push API\n", "Proposed", "", "proposed", "Proposed"),
        ("* 2020-05-19: First draft. Accepted\n", "Proposed", "", "proposed", "Proposed"),
        # An undated entry states nothing.
        ("* Accepted.\n", "Proposed", "", "proposed", "Proposed"),
        # Other wordings of a status entry.
        (
            "- **2024-05-22** (@hvanz) - Reverted (@hvanz)\n",
            "Proposed",
            "",
            "deprecated",
            "Reverted (@hvanz)",
        ),
        (
            "* 2023-01-02: Status changed to accepted\n",
            "Proposed",
            "",
            "accepted",
            "Status changed to accepted",
        ),
        ("* 2024年3月1日: 承認済み\n", "提案中", "", "accepted", "承認済み"),
        # Typed front matter decides over both.
        (HERMES, "Proposed.", "---\nstatus: proposed\n---\n", "proposed", "Proposed."),
    ],
)
def test_a_logged_decision_stands_over_a_status_left_at_proposed(
    changelog: str, status: str | None, front: str, expected: str, raw: str
) -> None:
    adr = parse_adr("adr-010-unified-cli.md", _doc(changelog, status, front))
    assert (adr.status, adr.raw_status) == (expected, raw)


def test_the_reader_is_told_when_the_changelog_overrides_the_status() -> None:
    adr = parse_adr("adr-010-unified-cli.md", _doc(HERMES))
    assert any("Changelog records 'Accepted.' on 2022-06-28: accepted is used" in n for n in adr.notes)
    assert not parse_adr("adr-010-unified-cli.md", _doc(HERMES, status=None)).notes
    typed = parse_adr("adr-010-unified-cli.md", _doc(HERMES, front="---\nstatus: proposed\n---\n"))
    assert typed.status == "proposed" and not typed.notes


@pytest.mark.parametrize(
    ("changelog", "date"),
    [
        (HERMES, "2022-06-15"),
        ("* 2021-03-01: Second draft\n* 2020-07-22: First draft\n", "2020-07-22"),
        ("- Initial draft (2020-01-01)\n", "2020-01-01"),  # a date inside the entry still dates the ADR
    ],
)
def test_the_adr_is_dated_by_its_earliest_changelog_entry(changelog: str, date: str) -> None:
    assert parse_adr("adr-010-unified-cli.md", _doc(changelog)).date == date


def test_only_the_first_dated_changelog_section_is_read() -> None:
    text = "# T\n\n## Changelog\n\nNone yet.\n\n## Change log\n\n* 2022-06-28: Accepted.\n\n## Release history\n\n* 2023-01-01: Rejected.\n"
    doc = read_markdown(text)
    entries = changelog_entries(text.split("\n"), doc.headings)
    assert [(e.date, e.status) for e in entries] == [("2022-06-28", "accepted")]
    decision = logged_decision(entries)
    assert decision is not None and decision.text == "Accepted."
