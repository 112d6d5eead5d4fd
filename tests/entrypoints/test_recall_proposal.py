"""The proposal of `adr-review recall --file`: a file of the ADR folder that the sync found unchanged
is the parse cache's parse of the same bytes (what a fresh parse gives, its own id kept when the
folder had to rename a duplicate), and anything else is parsed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from adr_review.adapters.index_open import Synced, ensure_synced, open_index_for
from adr_review.core import adr as adr_package
from adr_review.core.adr import AdrParseError, parse_adr
from adr_review.entrypoints.commands import recall

FILES = {
    "0001-kafka.md": "# 1. Use Kafka for events\n\n## Status\n\nAccepted\n\n## Context\n\nDomain events.\n",
    # the same id as 0001: the folder lists this one under its file name, a fresh parse does not
    "0001-redis.md": "# 1. Use Redis for caching\n\n## Status\n\nProposed\n\n## Context\n\nLatency.\n",
}


def _settled(folder: Path) -> None:
    """Files written a minute ago: the parse cache trusts only mtimes older than its racy window."""
    old = time.time() - 60
    for p in folder.iterdir():
        os.utime(p, (old, old))


def _synced(tmp_path: Path) -> tuple[Path, Synced]:
    folder = tmp_path / "adr"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    _settled(folder)
    ensure_synced(open_index_for(folder, tmp_path / "store"), folder)  # the caches are written
    return folder, ensure_synced(open_index_for(folder, tmp_path / "store"), folder)  # a no-op sync


@pytest.mark.parametrize("name", sorted(FILES))
def test_an_unchanged_file_of_the_folder_is_the_caches_parse_and_equals_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    folder, synced = _synced(tmp_path)
    assert sorted(a.adr_id for a in synced.adrs) == ["0001-redis", "ADR-0001"]  # the folder renamed one
    rel, data, inside = recall.read_proposal(folder / name, folder)
    assert (rel, inside) == (name, True)
    fresh = parse_adr(rel, data)

    def no_parse(*_args: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(adr_package, "parse_adr", no_parse)
    got = recall.parse_proposal(rel, data, inside, synced)
    assert got == fresh and got.adr_id == "ADR-0001"  # the duplicate keeps the id it was written with


@pytest.mark.parametrize(
    ("case", "edit"),
    [
        ("other bytes than the cache's", lambda p: p.write_text(p.read_text() + "\nAmended.\n")),
        ("outside the folder", None),
    ],
)
def test_any_other_proposal_is_parsed(tmp_path: Path, case: str, edit: object) -> None:
    folder, synced = _synced(tmp_path)
    path = folder / "0001-kafka.md"
    if edit is None:
        path = tmp_path / "proposal.md"
        path.write_text(FILES["0001-kafka.md"])
    else:
        edit(path)  # type: ignore[operator]
    rel, data, inside = recall.read_proposal(path, folder)
    assert inside is (edit is not None), case
    assert recall.parse_proposal(rel, data, inside, synced) == parse_adr(rel, data)


def test_after_a_sync_that_parsed_the_folder_the_proposal_is_parsed(tmp_path: Path) -> None:
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-kafka.md").write_text(FILES["0001-kafka.md"])
    synced = ensure_synced(open_index_for(folder, tmp_path / "store"), folder)  # a cold index
    assert synced.parse_of("0001-kafka.md", "0" * 64) is None
    rel, data, inside = recall.read_proposal(folder / "0001-kafka.md", folder)
    assert recall.parse_proposal(rel, data, inside, synced) == parse_adr(rel, data)


def test_a_proposal_that_is_no_adr_is_a_parse_error(tmp_path: Path) -> None:
    folder, synced = _synced(tmp_path)
    path = tmp_path / "binary.md"
    path.write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(AdrParseError):
        recall.parse_proposal(*recall.read_proposal(path, folder), synced)
