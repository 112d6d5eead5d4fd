"""The arrays-with-a-meta-record file beside the index (adapters/array_file.py): what is written
reads back as read-only views of the file; a file of another format, configuration or version, or
one damaged anywhere, reads as None (the caller computes everything again)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adr_review.adapters.array_file import read_arrays, write_arrays

META = {"format": "f/1", "config": "c", "texts": ["ログの保持期間", "plain", "é" * 3]}
ARRAYS = {
    "ids": np.arange(5, dtype=np.int16),
    "values": np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3),
    "empty": np.zeros(0, dtype=np.int64),
    "text": np.frombuffer("保持期間".encode(), dtype=np.uint8),
}


def test_what_is_written_reads_back_with_its_meta_and_arrays(tmp_path: Path) -> None:
    path = tmp_path / "x.arrays"
    write_arrays(path, META, "test data", **ARRAYS)
    got = read_arrays(path, "f/1", "c")
    assert got is not None
    meta, arrays = got
    assert {k: v for k, v in meta.items() if k != "arrays"} == META and meta["arrays"] == list(ARRAYS)
    assert list(arrays) == list(ARRAYS)
    for name, want in ARRAYS.items():
        assert arrays[name].dtype == want.dtype and np.array_equal(arrays[name], want), name
    assert not arrays["ids"].flags.writeable  # a view of the mapped file


def test_a_write_replaces_the_npz_an_earlier_version_kept(tmp_path: Path) -> None:
    legacy = tmp_path / "x.npz"
    np.savez(legacy, meta=np.frombuffer(json.dumps(META).encode(), dtype=np.uint8))
    write_arrays(tmp_path / "x.arrays", META, "test data", ids=ARRAYS["ids"])
    assert not legacy.exists() and read_arrays(tmp_path / "x.arrays", "f/1", "c") is not None


def _file(tmp_path: Path) -> bytes:
    write_arrays(tmp_path / "x.arrays", META, "test data", **ARRAYS)
    return (tmp_path / "x.arrays").read_bytes()


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array(out, array, allow_pickle=True)
    return out.getvalue()


@pytest.mark.parametrize(
    ("format_", "config", "damage"),
    [
        ("f/2", "c", None),  # another format
        ("f/1", "other", None),  # another configuration
        ("f/1", "c", lambda b: b""),
        ("f/1", "c", lambda b: b"PK\x03\x04 a zip: the .npz of an earlier version"),
        ("f/1", "c", lambda b: b[:-1]),  # the last record cut short
        ("f/1", "c", lambda b: b + b"\x00"),  # bytes after the last record
        ("f/1", "c", lambda b: b + _npy(np.arange(3))),  # a record the meta does not name
        ("f/1", "c", lambda b: b[:200]),
    ],
)
def test_a_mismatched_or_damaged_file_reads_as_none(
    tmp_path: Path, format_: str, config: str, damage: object
) -> None:
    data = _file(tmp_path)
    if damage is not None:
        (tmp_path / "x.arrays").write_bytes(damage(data))  # type: ignore[operator]
    assert read_arrays(tmp_path / "x.arrays", format_, config) is None


def test_a_pickled_record_is_refused(tmp_path: Path) -> None:
    meta = json.dumps({**META, "arrays": ["objects"]}).encode()
    path = tmp_path / "x.arrays"
    path.write_bytes(_npy(np.frombuffer(meta, dtype=np.uint8)) + _npy(np.array([{"a": 1}], dtype=object)))
    assert read_arrays(path, "f/1", "c") is None


def test_meta_bytes_that_are_not_utf8_json_read_as_none(tmp_path: Path) -> None:
    path = tmp_path / "x.arrays"
    for meta in (b'{"format": "\xff"}', b"[1, 2]", b'{"format": "f/1", "config": "c", "arrays": 3}'):
        path.write_bytes(_npy(np.frombuffer(meta, dtype=np.uint8)))
        assert read_arrays(path, "f/1", "c") is None, meta


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(min_value=0), flip=st.integers(min_value=0), byte=st.integers(0, 255))
def test_any_truncation_or_changed_byte_reads_as_none_or_as_arrays(
    tmp_path_factory: pytest.TempPathFactory, cut: int, flip: int, byte: int
) -> None:
    """Never an exception: a truncated file is None; a changed byte is None or some arrays (the
    caller validates what they hold)."""
    tmp = tmp_path_factory.mktemp("damaged")
    data = bytearray(_file(tmp))
    path = tmp / "x.arrays"
    path.write_bytes(bytes(data[: cut % len(data)]))
    assert read_arrays(path, "f/1", "c") is None
    data[flip % len(data)] = byte
    path.write_bytes(bytes(data))
    got = read_arrays(path, "f/1", "c")
    assert got is None or isinstance(got[1], dict)
