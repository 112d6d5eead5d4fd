"""The arrays-with-a-meta-record file beside the index (adapters/npz_file.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from adr_review.adapters.npz_file import read_npz, write_npz

META = {"format": "f/1", "config": "c", "texts": ["ログの保持期間", "plain", "é" * 3]}


def test_what_is_written_reads_back_with_its_meta_and_arrays(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    write_npz(path, META, "test data", compressed=True, ids=np.arange(5, dtype=np.int16))
    got = read_npz(path, "f/1", "c")
    assert got is not None
    meta, arrays = got
    assert meta == META and arrays["ids"].tolist() == [0, 1, 2, 3, 4]


def test_the_meta_record_is_stored_as_utf8_bytes(tmp_path: Path) -> None:
    """A numpy string is UTF-32: four bytes a character to inflate on every read."""
    path = tmp_path / "x.npz"
    write_npz(path, META, "test data")
    with np.load(path) as z:
        stored = z["meta"]
    assert stored.dtype == np.uint8
    assert len(stored) == len(json.dumps(META, ensure_ascii=False).encode("utf-8"))


def test_a_file_written_with_a_string_meta_record_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "old.npz"
    np.savez(path, meta=np.array(json.dumps(META)), ids=np.arange(3))
    got = read_npz(path, "f/1", "c")
    assert got is not None and got[0] == META


@pytest.mark.parametrize(
    ("format_", "config", "content"),
    [
        ("f/2", "c", None),  # another format
        ("f/1", "other", None),  # another configuration
        ("f/1", "c", b"\x00 damaged"),
        ("f/1", "c", b"PK\x03\x04 truncated zip"),
    ],
)
def test_a_mismatched_or_damaged_file_reads_as_none(
    tmp_path: Path, format_: str, config: str, content: bytes | None
) -> None:
    path = tmp_path / "x.npz"
    write_npz(path, META, "test data")
    if content is not None:
        path.write_bytes(content)
    assert read_npz(path, format_, config) is None


def test_meta_bytes_that_are_not_utf8_read_as_none(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    np.savez(path, meta=np.frombuffer(b'{"format": "\xff"}', dtype=np.uint8))
    assert read_npz(path, "f/1", "c") is None
