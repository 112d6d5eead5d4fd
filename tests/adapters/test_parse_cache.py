"""The parse cache: unchanged files (same size and mtime, modified well before the cache was written)
are not even read; a change hidden behind an equal size and mtime right after a write is still found;
sections are offsets into the text; a cached load equals a fresh parse."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from adr_review.adapters import adr_files, parse_cache
from adr_review.adapters.adr_files import load_adr_folder, load_adr_folder_cached
from adr_review.core.adr import AdrParseError

CORPORA = Path(__file__).resolve().parents[1] / "fixtures" / "corpora"
HOUR_NS = 3600 * 10**9


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Two fixture corpora (English and Japanese), last modified an hour ago."""
    d = tmp_path / "adr"
    for name in ("kumahq__kuma", "kompiro__karasu"):
        shutil.copytree(CORPORA / name, d / name)
    past = time.time_ns() - HOUR_NS
    for p in d.rglob("*.md"):
        os.utime(p, ns=(past, past))
    return d


def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the ADR files the loader opens (every read goes through read_bounded)."""
    seen: list[str] = []
    real = adr_files.read_bounded

    def counting(path: Path, rel: str, max_bytes: int = adr_files.MAX_BYTES) -> bytes:
        seen.append(path.name)
        return real(path, rel, max_bytes)

    monkeypatch.setattr(adr_files, "read_bounded", counting)
    return seen


def test_unchanged_files_are_not_read_and_the_load_equals_a_fresh_parse(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "store" / "parsed.json"
    fresh = load_adr_folder(folder)
    assert load_adr_folder_cached(folder, cache)[0] == fresh[0]
    seen = reads(monkeypatch)
    again = load_adr_folder_cached(folder, cache)
    assert seen == []
    assert again[0] == fresh[0]
    assert [(e.path, e.reason) for e in again[1]] == [(e.path, e.reason) for e in fresh[1]]

    victim = sorted((folder / "kumahq__kuma").glob("0*.md"))[0]
    victim.write_text(victim.read_text(encoding="utf-8") + "\nAmended.\n", encoding="utf-8")
    seen.clear()
    after = load_adr_folder_cached(folder, cache)
    assert seen == [victim.name]  # read once, hashed and parsed: only the changed file
    assert {a.path: a for a in after[0]}[victim.relative_to(folder).as_posix()].text.endswith("Amended.\n")


def test_a_same_size_change_right_after_the_cache_was_written_is_found(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "parsed.json"
    victim = sorted((folder / "kumahq__kuma").glob("0*.md"))[0]
    victim.write_text(victim.read_text(encoding="utf-8"), encoding="utf-8")  # modified now
    load_adr_folder_cached(folder, cache)
    st = victim.stat()
    text = victim.read_text(encoding="utf-8")
    swapped = text.replace("Context", "CONTEXT", 1)
    assert swapped != text and len(swapped.encode()) == st.st_size
    victim.write_text(swapped, encoding="utf-8")
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime: racily clean
    rel = victim.relative_to(folder).as_posix()
    got = {a.path: a for a in load_adr_folder_cached(folder, cache)[0]}
    assert "CONTEXT" in got[rel].text


def payload(cache: Path) -> dict[str, dict[str, object]]:
    manifest = json.loads(cache.read_text(encoding="utf-8"))
    return json.loads((cache.parent / manifest["payload"]).read_text(encoding="utf-8"))


def test_sections_are_stored_as_offsets_into_the_text(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "parsed.json"
    adrs, _ = load_adr_folder_cached(folder, cache)
    parses = payload(cache)
    spans = [s for adr in parses.values() for s in adr["sections"].values()]  # type: ignore[attr-defined]
    assert spans and sum(isinstance(s, list) for s in spans) >= 0.9 * len(spans)
    assert all("path" not in adr and "content_hash" not in adr for adr in parses.values())
    assert json.loads(cache.read_text(encoding="utf-8"))["files"]  # the manifest: stats and hashes only
    assert cache.stat().st_size < 0.05 * sum(len(a.text.encode()) for a in adrs)
    size = (cache.parent / json.loads(cache.read_text(encoding="utf-8"))["payload"]).stat().st_size
    assert size < 1.4 * sum(len(a.text.encode()) for a in adrs)  # the text once, plus the fields


def test_the_fast_decoder_agrees_with_serde(folder: Path, tmp_path: Path) -> None:
    from adr_review.core.adr import Adr
    from adr_review.core.serde import from_dict, to_dict

    cache = tmp_path / "parsed.json"
    load_adr_folder_cached(folder, cache)
    adrs = []  # as parsed, before ids are made unique (what the cache keeps)
    for path, rel in adr_files.list_adr_files(folder):
        with contextlib.suppress(AdrParseError):
            adrs.append(adr_files.read_adr_file(path, rel))
    reread = parse_cache.ParseCache(cache, adr_files._parser_version())
    assert len(reread.entries) >= len(adrs) > 10
    for adr in adrs:
        got = reread.adr(adr.path, reread.entries[adr.path])
        assert got == from_dict(Adr, to_dict(adr)) == adr
    assert parse_cache._converters() is not None  # every field of Adr has a shape the fast path knows


def test_an_unchanged_folder_is_answered_from_the_manifest_alone(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "parsed.json"
    expected = load_adr_folder_cached(folder, cache)
    seen = reads(monkeypatch)
    unchanged = adr_files.unchanged_adr_folder(folder, cache)
    assert unchanged is not None and seen == []
    assert unchanged.hashes() == {a.path: a.content_hash for a in expected[0]}
    assert [(e.path, e.reason) for e in unchanged.errors] == [(e.path, e.reason) for e in expected[1]]
    assert unchanged.adrs == expected[0]  # built from the cached parses, no file read
    assert seen == []
    victim = sorted((folder / "kumahq__kuma").glob("0*.md"))[0]
    victim.write_text(victim.read_text(encoding="utf-8") + "\nAmended.\n", encoding="utf-8")
    assert adr_files.unchanged_adr_folder(folder, cache) is None
    load_adr_folder_cached(folder, cache)
    victim.unlink()
    assert adr_files.unchanged_adr_folder(folder, cache) is None  # a file went


def test_a_file_modified_just_before_the_cache_was_written_is_unchanged_when_its_bytes_are(
    folder: Path, tmp_path: Path
) -> None:
    """Racily clean: right after a refresh, an equal size and mtime prove nothing, so the file is
    hashed; the same bytes keep the folder unchanged (no full reload), other bytes do not."""
    cache = tmp_path / "parsed.json"
    victim = sorted((folder / "kumahq__kuma").glob("0*.md"))[0]
    victim.write_text(victim.read_text(encoding="utf-8") + "\nAmended.\n", encoding="utf-8")  # now
    expected = load_adr_folder_cached(folder, cache)
    before = json.loads(cache.read_text(encoding="utf-8"))["written_ns"]
    unchanged = adr_files.unchanged_adr_folder(folder, cache)
    assert unchanged is not None
    assert unchanged.hashes() == {a.path: a.content_hash for a in expected[0]}
    assert json.loads(cache.read_text(encoding="utf-8"))["written_ns"] > before  # hashed, re-recorded

    st = victim.stat()
    text = victim.read_text(encoding="utf-8")
    swapped = text.replace("Amended", "AMENDED", 1)
    assert len(swapped.encode()) == st.st_size
    victim.write_text(swapped, encoding="utf-8")
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime, other bytes
    assert adr_files.unchanged_adr_folder(folder, cache) is None


def test_a_file_modified_long_before_the_cache_was_written_is_not_read(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "parsed.json"
    load_adr_folder_cached(folder, cache)
    hashed: list[str] = []
    real = parse_cache.ParseCache.racily_same

    def counting(self: parse_cache.ParseCache, path: Path, rel: str, st: os.stat_result) -> object:
        hashed.append(rel)
        return real(self, path, rel, st)

    monkeypatch.setattr(parse_cache.ParseCache, "racily_same", counting)
    before = cache.stat().st_mtime_ns
    assert adr_files.unchanged_adr_folder(folder, cache) is not None
    assert hashed == [] and cache.stat().st_mtime_ns == before  # nothing hashed, nothing written


def test_a_racy_file_is_read_only_up_to_its_recorded_size(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that grew after its stat (even to any size) is read no further than one byte past the
    size the stat gave, and is not the recorded file."""
    cache_file = tmp_path / "parsed.json"
    victim = sorted((folder / "kumahq__kuma").glob("0*.md"))[0]
    victim.write_text(victim.read_text(encoding="utf-8") + "\nAmended.\n", encoding="utf-8")
    load_adr_folder_cached(folder, cache_file)
    cache = parse_cache.ParseCache(cache_file, adr_files._parser_version())
    rel = victim.relative_to(folder).as_posix()
    st = victim.stat()
    assert cache.racily_same(victim, rel, st) is not None
    with victim.open("ab") as f:
        f.write(b"x" * 1_000_000)
    asked: list[int] = []
    real_open = Path.open

    def recording_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        handle = real_open(self, *args, **kwargs)
        real_read = handle.read

        def read(n: int = -1) -> bytes:
            asked.append(n)
            return real_read(n)

        handle.read = read
        return handle

    monkeypatch.setattr(Path, "open", recording_open)
    assert cache.racily_same(victim, rel, st) is None
    assert asked == [st.st_size + 1]
