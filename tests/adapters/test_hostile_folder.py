"""Hostile files in a real ADR folder on disk: one bad file costs only itself, never the folder, the
parse cache or the run (issue 26, items 10, 12, 15 and 16)."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import orjson
import pytest

from adr_review.adapters.adr_files import load_adr_folder, load_adr_folder_cached
from adr_review.cli import main

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


def test_a_file_name_that_is_not_utf8_is_kept_as_its_bytes_and_the_cache_still_works(tmp_path: Path) -> None:
    root = _folder(tmp_path / "adrs", {})
    (root / os.fsdecode(b"0003-caf\xe9.md")).write_bytes(b"# 3. Cafe\n\n## Decision\nWe drink coffee.\n")
    cache = tmp_path / "cache" / "parsed-adrs.json"
    for paths, errors in _loads(root, cache):
        assert paths == ["0001-use-postgres.md", "0003-caf%E9.md"] and errors == []
    assert orjson.loads(cache.read_bytes())["files"].keys() == {"0001-use-postgres.md", "0003-caf%E9.md"}


def test_a_file_name_that_is_not_utf8_can_be_the_reviewed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _folder(tmp_path / "adrs", {})
    (root / os.fsdecode(b"0003-caf\xe9.md")).write_bytes(b"# 3. Cafe\n\n## Decision\nWe drink coffee.\n")
    monkeypatch.chdir(root)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = main(
        ["review", os.fsdecode(b"0003-caf\xe9.md"), "--adr-dir", ".", "--index-dir", str(tmp_path / "ix")]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "path=0003-caf%25E9.md" in out.splitlines()[0]  # the marker names the file as its bytes


def test_a_huge_file_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    root = _folder(tmp_path / "adrs", {})
    with (root / "0002-huge.md").open("wb") as f:
        f.truncate(64 * 2**20)  # sparse: 64 MiB of size, no disk
    cache = tmp_path / "cache" / "parsed-adrs.json"
    tracemalloc.start()
    try:
        loads = _loads(root, cache)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB allocated: the huge file was read"
    for paths, errors in loads:
        assert paths == ["0001-use-postgres.md"] and errors == ["0002-huge.md"]
    adrs, errors = load_adr_folder(root)
    assert "file too large (67108864 bytes > limit 1000000)" in errors[0].reason


def test_a_path_past_path_max_is_skipped_with_a_note(tmp_path: Path) -> None:
    root = _folder(tmp_path / "adrs", {})
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(20):  # 20 folders of 250 characters: past PATH_MAX (4,096) on every platform
            os.mkdir("d" * 250, dir_fd=fd)
            inner = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open("0009-deep.md", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        os.write(out, b"# 9. Deep\n")
        os.close(out)
    finally:
        os.close(fd)
    for paths, errors in _loads(root, tmp_path / "cache" / "parsed-adrs.json"):
        assert paths == ["0001-use-postgres.md"]
        assert len(errors) == 1 and errors[0].startswith("d" * 250 + "/")
    _adrs, (error,) = load_adr_folder(root)
    assert "File name too long" in error.reason


@pytest.mark.parametrize("impostor", ["ADR-0\u2060001", "ＡＤＲ-０００１", "ADR\u20130001"])
def test_an_id_written_to_pass_for_another_is_deduplicated_as_that_id(tmp_path: Path, impostor: str) -> None:
    """The impostor is folded to the id a reader sees, then listed as any later file repeating a number:
    by its file stem, never as a second ADR-0001."""
    fake = f"---\nid: {impostor}\n---\n# Use MongoDB instead\n\n## Decision\nWe use MongoDB.\n".encode()
    root = _folder(tmp_path / "adrs", {"0005-mongo.md": fake})
    for adrs, _errors in (
        load_adr_folder(root),
        load_adr_folder_cached(root, tmp_path / "c" / "parsed.json"),
    ):
        assert [(a.path, a.adr_id) for a in adrs] == [
            ("0001-use-postgres.md", "ADR-0001"),
            ("0005-mongo.md", "0005-mongo"),
        ]


def test_the_apps_remote_folder_skips_the_same_hostile_files() -> None:
    """The App reads the default branch through the API: a 4 kB past ADR with a huge integer or an
    impostor id costs itself only there too."""
    from adr_review.adapters.remote_folder import BlobCache, load_remote_folder
    from tests.fakes.github_port import MemoryGitHub

    hostile = {
        "docs/adr/0002-hex.md": f"---\ntags: {HEX}\n---\n# 2. Hex\n".encode(),
        "docs/adr/0003-long-id.md": ("---\nid: ADR-" + "1" * 5_000 + "\n---\n# 3. Long\n").encode(),
        "docs/adr/0004-impostor.md": "---\nid: ADR-0\u2060001\n---\n# 4. Impostor\n".encode(),
    }
    gh = MemoryGitHub(files={"main": {"docs/adr/0001-use-postgres.md": GOOD.encode(), **hostile}})
    adrs, _notices = load_remote_folder(gh, "acme/shop", "main", "docs/adr", BlobCache())
    ids = {a.path: a.adr_id for a in adrs}
    assert ids["0001-use-postgres.md"] == "ADR-0001" and ids["0004-impostor.md"] == "0004-impostor"
    assert ids["0002-hex.md"] == "ADR-0002" and len(ids["0003-long-id.md"]) == 5_004


@pytest.mark.parametrize(
    "argv",
    [
        ["review", "{file}", "--adr-dir", "{adrs}", "--store", "{store}"],
        ["recall", "--adr-dir", "{adrs}", "--store", "{store}", "--file", "{file}", "--offline"],
        ["blind-spots", "--file", "{file}", "--adr-dir", "{adrs}", "--store", "{store}"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_huge_file_given_to_a_command_is_refused_by_its_size_before_it_is_read(
    tmp_path: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-unused")  # blind-spots needs one to start; no call is made
    root = _folder(tmp_path / "adrs", {})
    huge = tmp_path / "0009-huge.md"
    with huge.open("wb") as f:
        f.truncate(64 * 2**20)  # sparse: 64 MiB of size, no disk
    args = [a.format(file=huge, adrs=root, store=tmp_path / "store") for a in argv]
    tracemalloc.start()
    try:
        code = main(args)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err
    assert code == 2 and "too large" in err
    assert peak < 48 * 2**20, f"{peak / 2**20:.0f} MiB allocated: the huge file was read"
