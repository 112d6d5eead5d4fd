"""Hostile files in a real ADR folder on disk: one bad file costs only itself, never the folder, the
parse cache or the run (issue 26, items 10, 12, 15 and 16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.adapters.adr_files import load_adr_folder, load_adr_folder_cached

GOOD = "# 1. Use PostgreSQL\n\n## Status\nAccepted\n\n## Decision\nWe use PostgreSQL 15 for orders.\n"
HEX = "0x" + "f" * 4_000


def _folder(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "0001-use-postgres.md").write_text(GOOD)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def _loads(root: Path, cache: Path) -> list[tuple[list[str], list[str]]]:
    """The folder loaded plainly, then twice through the parse cache (a cold and a warm load)."""
    out = []
    for adrs, errors in (
        load_adr_folder(root),
        load_adr_folder_cached(root, cache),
        load_adr_folder_cached(root, cache),
    ):
        out.append(([a.path for a in adrs], [e.path for e in errors]))
    return out


@pytest.mark.parametrize(
    "front",
    [
        f"tags: {HEX}",
        f"? {HEX}\n: a",
        "id: ADR-" + "1" * 5_000,
        "id: ADR-" + "1" * 4_000,
        "tags: 1" + ":59" * 3_000,
    ],
)
def test_a_past_adr_with_a_huge_integer_costs_only_itself(tmp_path: Path, front: str) -> None:
    bad = f"---\n{front}\n---\n# 2. Use queues\n\n## Decision\nWe use queues.\n".encode()
    root = _folder(tmp_path / "adrs", {"0002-use-queues.md": bad})
    for paths, _errors in _loads(root, tmp_path / "cache" / "parsed-adrs.json"):
        assert "0001-use-postgres.md" in paths
    assert (tmp_path / "cache" / "parsed-adrs.json").is_file()  # the parse cache was written
