"""One file of arrays beside the index with a JSON meta record: read only when its format and
configuration match, written atomically (a temporary file per process, then a rename), so a crash
or two racing syncs leave either the old file or the new one, never half of either.

The file is numpy's own .npy records one after another, the meta record (UTF-8 JSON, naming the
arrays that follow) first. A read maps the file and makes each array a read-only view of it: a
recall touches only the pages it uses (an .npz is copied and checksummed whole by zipfile, to score a
query against a fifth of it). No pickles: a record with an
object dtype, a header numpy refuses, a truncated record or bytes past the last one read as None.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import mmap
import os
import tokenize
from pathlib import Path
from typing import IO, Any

import numpy as np

log = logging.getLogger("adr_review.index")

SUFFIX = ".arrays"
_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def read_arrays(path: Path, format_: str, config: str) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """(meta, arrays), or None when the file is missing, unreadable or made for another format or
    configuration (the caller then computes everything again)."""
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return None
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            meta = json.loads(_record(f, mapped, size).tobytes().decode("utf-8"))
            if not isinstance(meta, dict) or meta.get("format") != format_ or meta.get("config") != config:
                return None
            names = meta.get("arrays")
            if not isinstance(names, list):
                return None
            arrays = {str(name): _record(f, mapped, size) for name in names}
            if f.tell() != size:
                return None  # bytes after the last record: not a file this module wrote
            return meta, arrays
    except (OSError, ValueError, TypeError):  # json's and UTF-8's errors are ValueErrors
        return None


def write_arrays(path: Path, meta: dict[str, Any], what: str, **arrays: np.ndarray) -> None:
    """Write atomically; a failure is a warning (`what` names the data: the next sync computes it again)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    record = json.dumps({**meta, "arrays": list(arrays)}, ensure_ascii=False).encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as f:
            for array in (np.frombuffer(record, dtype=np.uint8), *arrays.values()):
                np.lib.format.write_array(f, np.ascontiguousarray(array), allow_pickle=False)
        os.replace(tmp, path)
        if (legacy := path.with_suffix(".npz")) != path:
            legacy.unlink(missing_ok=True)  # what versions before 2026-12 kept instead
    except OSError as exc:
        log.warning("%s not written (%s): the next sync computes them again", what, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()


def _record(f: IO[bytes], mapped: mmap.mmap, size: int) -> np.ndarray:
    """The next record, as a view of the mapped file; ValueError when it is not a plain array."""
    version = np.lib.format.read_magic(f)
    if version not in _HEADERS:
        raise ValueError(f"npy version {version}")
    try:  # numpy tokenises the header (a Python dict literal) before it evaluates it
        shape, fortran, dtype = _HEADERS[version](f)
    except (tokenize.TokenError, SyntaxError, TypeError, KeyError) as exc:
        raise ValueError(f"npy header: {exc}") from exc
    if dtype.hasobject or (fortran and len(shape) > 1):
        raise ValueError("not a plain C-ordered array")
    count = math.prod(shape)
    start = f.tell()
    end = start + count * dtype.itemsize
    if end > size:
        raise ValueError("truncated record")
    f.seek(end)
    if count == 0:
        return np.zeros(shape, dtype=dtype)
    return np.frombuffer(mapped, dtype=dtype, count=count, offset=start).reshape(shape)
