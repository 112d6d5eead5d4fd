"""The formats real teams use: adr-tools' own spelling, status words under negation, dated and
foldered file names, ids that disagree, and which files of a folder are ADRs at all."""

from __future__ import annotations

import pytest

from adr_review.core.adr import Adr, AdrLink, normalize_status, parse_adr
from adr_review.core.adr_paths import adr_stem, is_adr_candidate, select_adr_files


def _adr(path: str, text: str) -> Adr:
    return parse_adr(path, text.encode())


# --- adr-tools --------------------------------------------------------------------------------------


def test_adr_tools_superceded_and_supercedes_are_typed_relations() -> None:
    """`adr new -s 1 -s 2 Third Record`, as adr-tools writes it (tests/supercede-multiple-adrs.expected)."""
    first = _adr(
        "0001-first-record.md",
        "# 1. First Record\n\nDate: 1992-01-12\n\n## Status\n\nSuperceded by [3. Third Record](0003-third-record.md)\n",
    )
    third = _adr(
        "0003-third-record.md",
        "# 3. Third Record\n\nDate: 1992-01-12\n\n## Status\n\nAccepted\n\n"
        "Supercedes [1. First Record](0001-first-record.md)\n\nSupercedes [2. Second Record](0002-second-record.md)\n",
    )
    assert (first.adr_id, first.title, first.status, first.date) == (
        "ADR-0001",
        "First Record",
        "superseded",
        "1992-01-12",
    )
    assert first.links == (AdrLink("superseded_by", "0003-third-record.md"),)
    assert third.status == "accepted"
    assert third.links == (
        AdrLink("supersedes", "0001-first-record.md"),
        AdrLink("supersedes", "0002-second-record.md"),
    )


@pytest.mark.parametrize(
    ("sentence", "link"),
    [
        ("This ADR has superseded ADR-3.", AdrLink("supersedes", "ADR-0003")),
        ("It was superceded by ADR 7 in 2020.", AdrLink("superseded_by", "ADR-0007")),
        ("* Superceded by: [ADR-0009](0009-x.md)", AdrLink("superseded_by", "0009-x.md")),
    ],
)
def test_relation_spellings(sentence: str, link: AdrLink) -> None:
    assert link in _adr("0005-x.md", f"# X\n\n## Decision\n\n{sentence}\n").links


# --- status words -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("未承認", "proposed"),
        ("承認待ち", "proposed"),
        ("未決定", "proposed"),
        ("提案中（承認待ち）", "proposed"),
        ("未採用", "proposed"),
        ("not accepted", "rejected"),
        ("Not approved", "rejected"),
        ("not yet accepted", "proposed"),
        ("Undecided", "proposed"),
        ("Decided", "accepted"),
        ("Accepted (not yet implemented)", "accepted"),
        ("承認済み", "accepted"),
        ("Superceded by ADR 3", "superseded"),
        ("never accepted", "unknown"),
    ],
)
def test_status_words_under_negation_are_not_accepted(raw: str, expected: str) -> None:
    assert normalize_status(raw) == expected


def test_the_date_label_and_japanese_dates() -> None:
    adr = _adr("0005-x.md", "# X\n\n日時: 2024年3月15日\n\n## 決定\n\nやる。\n")
    assert adr.date == "2024-03-15"
    assert _adr("0006-x.md", "# X\n\n- 作成日: 2023/1/9\n\n## Decision\n\nx\n").date == "2023-01-09"


# --- no links from version numbers or code -----------------------------------------------------------


def test_no_relation_links_from_version_numbers_or_code() -> None:
    adr = _adr(
        "0005-x.md",
        "# X\n\n## Decision\n\nWe follow MADR 4.0.0 (and ADR 2.1 tooling). Status values are\n"
        "`superseded by [ADR-0005](0005-example.md)` and `ADR-12`.\n\n```\nsupersedes ADR-0013\n```\n\nSee ADR-0004.\n",
    )
    assert adr.links == (AdrLink("related", "ADR-0004"),)


# --- file names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "adr_id", "number", "date", "title"),
    [
        ("2025-01-15-use-kafka.md", "2025-01-15-use-kafka", None, "2025-01-15", "Use kafka"),
        ("20201016-use-the-adr-slug.md", "20201016-use-the-adr-slug", None, "2020-10-16", "Use the adr slug"),
        ("2024031501-use-kafka.md", "ADR-20240315-01", None, "2024-03-15", "Use kafka"),
        ("20260316-01-svg-icons.md", "ADR-20260316-01", None, "2026-03-16", "Svg icons"),
        ("2021-06-05_001-record.md", "ADR-0001", 1, "2021-06-05", "Record"),
        ("0007-use-kafka/index.md", "ADR-0007", 7, None, "Use kafka"),
        ("0008-use-redis/README.md", "ADR-0008", 8, None, "Use redis"),
        ("002_da59eb14823afb63.txt", "002_da59eb14823afb63", None, None, "Da59eb14823afb63"),
    ],
)
def test_ids_dates_and_titles_from_file_names(
    path: str, adr_id: str, number: int | None, date: str | None, title: str
) -> None:
    adr = _adr(path, "Only prose here, no heading.\n")
    assert (adr.adr_id, adr.number, adr.date, adr.title) == (adr_id, number, date, title)


def test_dated_names_no_longer_share_one_id() -> None:
    ids = {_adr(p, "# T\n").adr_id for p in ("2025-01-15-a.md", "2025-01-16-b.md", "2025-02-01-c.md")}
    assert len(ids) == 3 and "ADR-2025" not in ids


def test_the_file_number_beats_a_copy_pasted_title_number_and_the_clash_is_noted() -> None:
    adr = _adr("0004-second-thoughts.md", "# 3. Second thoughts\n\n## Decision\n\nx\n")
    assert (adr.adr_id, adr.number, adr.title) == ("ADR-0004", 4, "Second thoughts")
    assert adr.notes == ("the title says ADR-0003 but the file name says ADR-0004: ADR-0004 is used",)
    agreed = _adr("0004-b.md", "# ADR 4: Agreed\n")
    assert (agreed.adr_id, agreed.notes) == ("ADR-0004", ())
    titled = _adr("notes.md", "# ADR-0071: From the title\n")  # no number in the name: the title's
    assert titled.adr_id == "ADR-0071"


# --- which files are ADRs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("LICENSE.md", False),
        ("licence.md", False),
        ("CHANGELOG.md", False),
        ("CONTRIBUTING.md", False),
        ("_sidebar.md", False),
        ("adr-template-bare-minimal.md", False),
        ("0007-use-kafka/index.md", True),
        ("0007-use-kafka/README.md", True),
        ("tendermint-core/README.md", False),  # a folder of ADRs, not one ADR
        ("0009-template/index.md", False),
        ("2024-q1/0001-x.md", True),  # a year-quarter folder is not an ADR folder
    ],
)
def test_is_adr_candidate(rel: str, expected: bool) -> None:
    assert is_adr_candidate(rel) is expected


def test_one_folder_per_adr_and_its_attachments() -> None:
    listing = [
        "0007-use-kafka/index.md",
        "0007-use-kafka/diagram-notes.md",
        "0008-plain.md",
        "rfc/20241206-oci-registries.md",
        "rfc/20241206-oci-registries/1-oci-primer.md",
        "rfc/20241206-oci-registries/2-survey.md",
        "rfc/README.md",
        "LICENSE.md",
    ]
    assert select_adr_files(listing) == [
        "0007-use-kafka/index.md",
        "0008-plain.md",
        "rfc/20241206-oci-registries.md",
    ]
    assert adr_stem("0007-use-kafka/index.md") == "0007-use-kafka"
    assert adr_stem("rfc/README.md") == "README"
