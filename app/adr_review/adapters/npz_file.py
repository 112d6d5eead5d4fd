"""One file of arrays beside the index with a JSON meta record: read only when its format and
configuration match, written atomically (a temporary file per process, then a rename), so a crash
or two racing syncs leave either the old file or the new one, never half of either."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("adr_review.index")


def read_npz(path: Path, format_: str, config: str) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """(meta, arrays), or None when the file is missing, unreadable or made for another format or
    configuration (the caller then computes everything again)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(_meta_text(z["meta"]))
            if not isinstance(meta, dict) or meta.get("format") != format_ or meta.get("config") != config:
                return None
            return meta, {k: z[k] for k in z.files if k != "meta"}
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        return None  # a truncated file that still starts like a zip is a BadZipFile


def write_npz(path: Path, meta: dict[str, Any], what: str, **arrays: np.ndarray) -> None:
    """Write atomically; a failure is a warning (`what` names the data: the next sync computes it again)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
    encoded = np.frombuffer(json.dumps(meta, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
    named: dict[str, Any] = {"meta": encoded, **arrays}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(tmp, **named)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("%s not written (%s): the next sync computes them again", what, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()


def _meta_text(stored: np.ndarray) -> str:
    """The meta record's JSON: UTF-8 bytes, or (files written before) a numpy string, which numpy
    keeps as UTF-32 (four bytes a character: the passages' texts made a 15 MB array to inflate)."""
    if stored.dtype == np.uint8:
        return stored.tobytes().decode("utf-8")
    return str(stored)
