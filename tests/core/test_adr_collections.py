"""Samples of ADR collections nobody tuned the parser on (tests/fixtures/collections/SOURCE.md): each
folder loads with the ids, statuses and typed relations a reader finds in it. The whole collections
are measured by benchmarks/adr_collections.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from adr_review.adapters.adr_files import load_adr_folder
from adr_review.core.adr import AdrLink

COLLECTIONS = Path(__file__).resolve().parents[1] / "fixtures" / "collections"

# folder -> {path: (id, status, typed relations)}; a file not listed is not an ADR (README, template...).
EXPECTED: dict[str, dict[str, tuple[str, str, tuple[AdrLink, ...]]]] = {
    "adr-tools-generated/supercede-existing": {
        "0001-first-record.md": (
            "ADR-0001",
            "superseded",
            (AdrLink("superseded_by", "0002-second-record.md"),),
        ),
        "0002-second-record.md": ("ADR-0002", "accepted", (AdrLink("supersedes", "0001-first-record.md"),)),
    },
    "adr-tools-generated/supercede-multiple": {
        "0001-first-record.md": (
            "ADR-0001",
            "superseded",
            (AdrLink("superseded_by", "0003-third-record.md"),),
        ),
        "0002-second-record.md": (
            "ADR-0002",
            "superseded",
            (AdrLink("superseded_by", "0003-third-record.md"),),
        ),
        "0003-third-record.md": (
            "ADR-0003",
            "accepted",
            (AdrLink("supersedes", "0001-first-record.md"), AdrLink("supersedes", "0002-second-record.md")),
        ),
    },
    "madr": {
        "0003-provide-own-madr-tools.md": ("ADR-0003", "proposed", ()),  # front matter "status: on hold"
        "0013-use-yaml-front-matter-for-meta-data.md": ("ADR-0013", "unknown", ()),
    },
    "log4brains": {
        "20200926-use-the-adr-number-as-its-unique-id.md": (
            "20200926-use-the-adr-number-as-its-unique-id",
            "superseded",
            (AdrLink("superseded_by", "20201016-use-the-adr-slug-as-its-unique-id.md"),),
        ),
        "20201016-use-the-adr-slug-as-its-unique-id.md": (
            "20201016-use-the-adr-slug-as-its-unique-id",
            "accepted",
            (AdrLink("supersedes", "20200926-use-the-adr-number-as-its-unique-id.md"),),
        ),
    },
    "arachne": {
        "adr-001-use-adrs.md": ("ADR-0001", "accepted", ()),
        "adr-017-simplify-chimera-model.md": (
            "ADR-0017",
            "proposed",
            (
                AdrLink("supersedes", "adr-015-data-abstraction-model.md"),
                AdrLink("supersedes", "adr-016-db-migrations.md"),
            ),
        ),
    },
    "govuk-aws": {
        "0003-aws-networking-outline.md": (
            "ADR-0003",
            "superseded",
            (AdrLink("superseded_by", "0033-ip-ranges.md"),),
        ),
        "0004-dns-definitions-for-hosts-and-services.md": (
            "ADR-0004",
            "superseded",
            (AdrLink("superseded_by", "0015-dns-infrastructure.md"),),
        ),
        "0006-puppet-architecture.md": ("ADR-0006", "proposed", ()),
        # Titled "3. Networking Outline" (copied from 0003): the file number wins, the clash is noted.
        "0033-ip-ranges.md": (
            "ADR-0033",
            "proposed",
            (AdrLink("supersedes", "0003-aws-networking-outline.md"),),
        ),
    },
    "opentofu": {
        "2025-07-22-conditional-enable.md": ("2025-07-22-conditional-enable", "unknown", ()),
        "20251105-use-cobra-instead-of-mitchellh.md": (
            "20251105-use-cobra-instead-of-mitchellh",
            "superseded",  # no status line; "This RFC has been superseded by ..."
            (AdrLink("superseded_by", "20260807-use-urfave-instead-of-cobra.md"),),
        ),
        "20260807-use-urfave-instead-of-cobra.md": (
            "20260807-use-urfave-instead-of-cobra",
            "unknown",
            (AdrLink("supersedes", "20251105-use-cobra-instead-of-mitchellh.md"),),
        ),
    },
    "route06-actions": {"001-adrの導入.md": ("ADR-0001", "accepted", ())},  # "- [x] 承認" in a task list
    "kzmshx-mcp-template": {"0002-use-fastmcp-framework.md": ("ADR-0002", "accepted", ())},
    # Statuses as shields.io badges under "## Status" (0023: the word); two files numbered 0020.
    "dfe-buy-for-your-school": {
        "0001-record-architecture-decisions.md": ("ADR-0001", "accepted", ()),
        "0003-use-standard-rb.md": (
            "ADR-0003",
            "superseded",
            (AdrLink("superseded_by", "0016-use-rubocop-govuk-for-code-linting.md"),),
        ),
        "0005-use-bullet-to-catch-nplus1-queries.md": (
            "ADR-0005",
            "superseded",  # a "Superseded" badge above "Superseded by [ADR-0032](...)"
            (AdrLink("superseded_by", "0032-remove-bullet-gem.md"),),
        ),
        "0016-use-rubocop-govuk-for-code-linting.md": (
            "ADR-0016",
            "accepted",
            (AdrLink("supersedes", "0003-use-standard-rb.md"),),
        ),
        "0020-use-accessible-autocomplete-for-autocomplete-fields.md": ("ADR-0020", "accepted", ()),
        # The second 0020 is known by its file name, never by an invented id.
        "0020-use-contentful-for-page-content.md": ("0020-use-contentful-for-page-content", "accepted", ()),
        "0023-use-scenic-to-manage-database-views.md": ("ADR-0023", "accepted", ()),
        "0032-remove-bullet-gem.md": (
            "ADR-0032",
            "accepted",
            (AdrLink("supersedes", "0005-use-bullet-to-catch-nplus1-queries.md"),),
        ),
        "0037-remove-vcr-gem-and-cassettes.md": ("ADR-0037", "accepted", ()),
    },
}


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_collection_samples_load_as_a_reader_reads_them(folder: str) -> None:
    adrs, errors = load_adr_folder(COLLECTIONS / folder)
    assert not errors
    got = {a.path: (a.adr_id, a.status, tuple(lk for lk in a.links if lk.kind != "related")) for a in adrs}
    assert got == EXPECTED[folder]


def test_the_copy_pasted_title_is_reported() -> None:
    adrs, _ = load_adr_folder(COLLECTIONS / "govuk-aws")
    notes = {a.path: a.notes for a in adrs}
    assert notes["0033-ip-ranges.md"] == (
        "the title says ADR-0003 but the file name says ADR-0033: ADR-0033 is used",
    )
    assert notes["0003-aws-networking-outline.md"] == ()
