"""`adr-review list --adr-dir DIR [--json]`: every ADR the tool read (id, title, status, date, language,
supersedes / superseded by) and every file it skipped with the reason, on a real badge-status
collection (tests/fixtures/collections/dfe-buy-for-your-school) plus the files a real folder also holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from adr_review.cli import main
from adr_review.core.adr import parse_adr
from adr_review.core.adr_list import as_json, list_folder

DFE = Path(__file__).resolve().parents[1] / "fixtures" / "collections" / "dfe-buy-for-your-school"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "decisions"
    shutil.copytree(DFE, root)
    (root / "README.md").write_text("# Decisions\n\nThe log.\n")
    (root / "template.md").write_text("# NUMBER. TITLE\n\n## Status\n\nSTATUS\n")
    (root / "0040-folder-adr").mkdir()
    (root / "0040-folder-adr" / "index.md").write_text("# 40. One folder\n\n## Status\n\nProposed\n")
    (root / "0040-folder-adr" / "diagram.md").write_text("# A diagram of 40\n")
    (root / "notes.txt").write_text("not an ADR")
    (root / "diagram.png").write_bytes(b"\x89PNG\r\n")
    (root / "0041-empty.md").write_text("")
    (tmp_path / "elsewhere.md").write_text("# 99. Outside\n")
    (root / "0042-outside.md").symlink_to(tmp_path / "elsewhere.md")
    (root / ".drafts").mkdir()
    (root / ".drafts" / "0043-draft.md").write_text("# 43. Draft\n")
    (root / "catalog-format.md").write_text(
        "---\nid: adrs-adr045\ntitle: 'ADR045: Catalog format'\nstatus: accepted\n---\n\n## Context\n\nC.\n"
    )
    return root


def _json(folder: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    assert main(["list", "--adr-dir", str(folder), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out, list)
    return out


def test_list_json_shows_every_adr_as_read(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entries = _json(folder, capsys)
    assert all({"id", "path", "title", "status", "skipped"} <= set(e) for e in entries)
    adrs = {e["path"]: e for e in entries if e["skipped"] is None}
    # Every file of the badge collection states a status (a badge or a word): none is unknown.
    for path in (p.name for p in DFE.iterdir()):
        assert adrs[path]["status"] in ("accepted", "superseded"), path
    assert (
        adrs["0037-remove-vcr-gem-and-cassettes.md"] | {"notes": []}
        == adrs["0037-remove-vcr-gem-and-cassettes.md"]
    )
    assert {
        k: adrs["0003-use-standard-rb.md"][k] for k in ("id", "status", "date", "language", "superseded_by")
    } == {
        "id": "ADR-0003",
        "status": "superseded",
        "date": "2019-09-06",
        "language": "en",
        "superseded_by": ["ADR-0016"],
    }
    assert adrs["0016-use-rubocop-govuk-for-code-linting.md"]["supersedes"] == ["ADR-0003"]
    assert adrs["0005-use-bullet-to-catch-nplus1-queries.md"]["superseded_by"] == ["ADR-0032"]
    assert adrs["0032-remove-bullet-gem.md"]["supersedes"] == ["ADR-0005"]
    # The second 0020 by its file name, and why.
    second = adrs["0020-use-contentful-for-page-content.md"]
    assert second["id"] == "0020-use-contentful-for-page-content"
    assert second["notes"] == [
        "ADR-0020 is also the id of 0020-use-accessible-autocomplete-for-autocomplete-fields.md: "
        "this file is listed as 0020-use-contentful-for-page-content"
    ]
    # A one-folder ADR by its folder's name; a page-slug front matter id gives way to the number.
    assert adrs["0040-folder-adr/index.md"]["id"] == "ADR-0040"
    catalog = adrs["catalog-format.md"]
    assert (catalog["id"], catalog["title"], catalog["status"]) == ("ADR-0045", "Catalog format", "accepted")
    assert "is a page slug" in catalog["notes"][0]


def test_list_json_says_what_it_skipped_and_why(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entries = _json(folder, capsys)
    skipped = {e["path"]: e["skipped"] for e in entries if e["skipped"] is not None}
    assert set(skipped) == {
        ".drafts/",
        "0040-folder-adr/diagram.md",
        "0041-empty.md",
        "0042-outside.md",
        "README.md",
        "diagram.png",
        "notes.txt",
        "template.md",
    }
    assert skipped["README.md"].startswith("not an ADR by its name")
    assert skipped["template.md"] == "a template, by its name"
    assert skipped["0040-folder-adr/diagram.md"].startswith("an attachment of the ADR in 0040-folder-adr/")
    assert skipped["0041-empty.md"] == "empty file"
    assert skipped["0042-outside.md"] == "symlink to a file outside the ADR folder: not followed"
    assert skipped[".drafts/"].startswith("hidden")
    assert skipped["notes.txt"] == skipped["diagram.png"] == "not Markdown"
    for e in entries:
        if e["skipped"] is not None:
            assert e["id"] is e["title"] is e["status"] is None


def test_list_text_has_one_line_per_adr_and_the_skipped_files(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", "--adr-dir", str(folder)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if line.startswith(("ADR-", "0020-use-contentful"))]
    assert len(rows) == 11  # the 9 DFE ADRs, 0040 and the catalog page
    assert not any(line.split()[1] == "unknown" for line in rows)
    assert any(r.startswith("ADR-0003") and "(superseded by ADR-0016)" in r for r in rows)
    assert "11 ADR(s) read: 8 accepted, 2 superseded, 1 proposed" in out
    assert "8 file(s) skipped:" in out
    assert "  README.md: not an ADR by its name (README.md: a README, index, licence or similar page)" in out
    assert any(line.startswith("  0020-use-contentful-for-page-content.md: ADR-0020 is also") for line in out)


def test_list_refuses_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--adr-dir", str(tmp_path / "nope")]) == 2
    assert "not a folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # Both sides say it.
        (
            {"0001-a.md": "Superseded by ADR-0002", "0002-b.md": "Supersedes ADR-0001"},
            {"ADR-0001": ((), ("ADR-0002",))},
        ),
        # Only the successor says it: the superseded one still lists its successor.
        (
            {"0001-a.md": "Accepted", "0002-b.md": "Accepted. Supersedes [1](0001-a.md)"},
            {"ADR-0001": ((), ("ADR-0002",))},
        ),
        # A link to a file that is not in the folder stays as written.
        ({"0001-a.md": "Superseded by [9](0009-gone.md)"}, {"ADR-0001": ((), ("0009-gone.md",))}),
        # Nothing stated, nothing listed.
        ({"0001-a.md": "Accepted", "0002-b.md": "Accepted"}, {"ADR-0001": ((), ()), "ADR-0002": ((), ())}),
    ],
)
def test_supersession_is_resolved_both_ways(
    files: dict[str, str], expected: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
) -> None:
    adrs = [
        parse_adr(p, f"# T\n\n## Status\n\n{status}\n\n## Context\n\nC.\n".encode())
        for p, status in files.items()
    ]
    listed, skipped = list_folder(adrs, [], sorted(files))
    assert not skipped
    got = {e.adr.adr_id: (e.supersedes, e.superseded_by) for e in listed}
    assert {k: got[k] for k in expected} == expected
    assert [e["id"] for e in as_json(listed, skipped)] == [a.adr_id for a in adrs]
