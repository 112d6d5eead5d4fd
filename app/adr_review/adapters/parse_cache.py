"""The parse cache of an ADR folder: earlier parses of unchanged files, kept beside the index.

An entry is found by the file's relative path and trusted without reading the file when its size
and mtime are the ones recorded and the file was last modified well before the cache was written
(RACY_NS: a change within the same timestamp tick as the write cannot hide behind an equal mtime,
git's "racily clean" rule). Otherwise the file is hashed, and parsed again only when its bytes
changed. A refresh therefore stats the folder and reads the cache.

Two files: the manifest (parsed-<collection>.json: per file its size, mtime, content hash or parse
error) and the parsed ADRs it names (parsed-<collection>.<token>.json), read only when ADRs are
needed: `unchanged_folder` answers "is the folder as it was?" from the manifest alone, so a no-op
re-index never loads the parses. Compact form: a parsed ADR without what its entry already says (path,
content hash), and every section that is a piece of the text (nearly all) as [start, end] offsets.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import time
import typing
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import orjson

from adr_review.core.adr import Adr, AdrParseError
from adr_review.core.serde import from_dict, to_dict

FORMAT = 3
RACY_NS = 2_000_000_000  # coarser than any filesystem's timestamp tick (FAT: 2 s)

Entry = dict[str, Any]  # {"size", "mtime_ns", "sha256"} and "error" for a file that does not parse


class ParseCache:
    """One folder's cache: `trusted` / `matching` find entries, `put_*` record, `save` writes."""

    def __init__(self, path: Path, parser: str) -> None:
        self.path = path
        self.key = f"{FORMAT}:{parser}"
        self.entries: dict[str, Entry] = {}
        self.written_ns = 0
        self._payload_name: str | None = None
        try:
            raw = orjson.loads(path.read_bytes())
            if raw.get("parser") == self.key:
                self.entries = dict(raw["files"])
                self.written_ns = int(raw["written_ns"])
                self._payload_name = raw.get("payload")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):  # orjson's error is a ValueError
            self.entries = {}
        self._payload: dict[str, Any] | None = None
        self._fresh: dict[str, Any] = {}  # rel -> compact ADR parsed this time
        self.kept: dict[str, Entry] = {}
        self.dirty = False

    def trusted(self, rel: str, st: os.stat_result) -> Entry | None:
        """The entry of an unchanged file by size and mtime alone, or None (then hash the file)."""
        hit = self.entries.get(rel)
        if (
            hit is not None
            and hit.get("size") == st.st_size
            and hit.get("mtime_ns") == st.st_mtime_ns
            and st.st_mtime_ns < self.written_ns - RACY_NS
        ):
            self.kept[rel] = hit
            return hit
        return None

    def racily_same(self, path: Path, rel: str, st: os.stat_result) -> Entry | None:
        """The entry of a file whose size and mtime are the recorded ones but too close to the
        cache's write to be trusted (RACY_NS): found when its bytes hash to the recorded digest, as
        git re-reads a racily clean file. None for any other file (changed, or unreadable)."""
        hit = self.entries.get(rel)
        if hit is None or (hit.get("size"), hit.get("mtime_ns")) != (st.st_size, st.st_mtime_ns):
            return None
        try:
            with path.open("rb") as f:
                data = f.read(st.st_size + 1)  # no more than the recorded size (and one byte to tell)
        except OSError:
            return None
        if len(data) != st.st_size:  # written to since the stat
            return None
        return self.matching(rel, st, hashlib.sha256(data).hexdigest())

    def matching(self, rel: str, st: os.stat_result, digest: str) -> Entry | None:
        """The entry of a file whose bytes are unchanged (its size and mtime are re-recorded)."""
        hit = self.entries.get(rel)
        if hit is None or hit.get("sha256") != digest:
            return None
        if (hit.get("size"), hit.get("mtime_ns")) != (st.st_size, st.st_mtime_ns):
            hit = {**hit, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
            self.dirty = True
        self.kept[rel] = hit
        return hit

    def adr(self, rel: str, entry: Entry) -> Adr:
        """The cached Adr, equal to a fresh parse; raises KeyError/TypeError/ValueError on a bad one."""
        data = self._fresh.get(rel)
        if data is None:
            data = self._parses()[rel]
        return adr_of(rel, entry["sha256"], data)

    def put_adr(self, rel: str, adr: Adr, st: os.stat_result | None) -> None:
        data = to_dict(adr)
        del data["path"], data["content_hash"]
        data["sections"] = {name: _span(adr.text, body) for name, body in adr.sections.items()}
        self._fresh[rel] = data
        self.kept[rel] = {**_stat(st), "sha256": adr.content_hash}
        self.dirty = True

    def put_error(self, rel: str, reason: str, st: os.stat_result | None, digest: str) -> None:
        self.kept[rel] = {**_stat(st), "sha256": digest, "error": reason}
        self.dirty = True

    def save(self) -> None:
        """Write when anything changed: new parses, files gone, re-recorded stats, racy entries. The
        parses are rewritten only when new ones were made or files went; a failed write only costs
        time (the next refresh parses again)."""
        racy = any(e.get("mtime_ns", 0) >= self.written_ns - RACY_NS for e in self.kept.values())
        gone = self.kept.keys() != self.entries.keys()
        if not (self.dirty or racy or gone):
            return
        store = self.path.parent
        payload = self._payload_name
        try:
            store.mkdir(parents=True, exist_ok=True)
            if self._fresh or gone or payload is None:
                old = self._parses() if any(r not in self._fresh for r in self._adr_rels()) else {}
                parses = {r: self._fresh[r] if r in self._fresh else old[r] for r in self._adr_rels()}
                payload = f"{self.path.stem}.{uuid.uuid4().hex[:12]}.json"
                _write_atomic(store / payload, orjson.dumps(parses))
            manifest = {
                "parser": self.key,
                "written_ns": time.time_ns(),
                "payload": payload,
                "files": self.kept,
            }
            _write_atomic(self.path, orjson.dumps(manifest))
        # KeyError: the old parses are gone; TypeError: a value JSON cannot hold. Either way the next
        # refresh parses again; the folder loaded this time is not lost.
        except (OSError, KeyError, TypeError):
            return
        for stale in store.glob(f"{self.path.stem}.*.json"):
            if stale.name != payload:
                with contextlib.suppress(OSError):
                    stale.unlink()

    def _adr_rels(self) -> list[str]:
        return [r for r, e in self.kept.items() if "error" not in e]

    def _parses(self) -> dict[str, Any]:
        if self._payload is None:
            if self._payload_name is None:
                raise KeyError("no parsed ADRs")
            try:
                self._payload = dict(orjson.loads((self.path.parent / self._payload_name).read_bytes()))
            except (OSError, ValueError, TypeError) as exc:
                raise KeyError(f"parsed ADRs unreadable: {exc}") from exc
        return self._payload


@dataclasses.dataclass
class UnchangedFolder:
    """A folder whose every file is the one the cache recorded: paths, hashes and errors without a
    read; `load()` builds the ADRs (once) from the cache when something needs them."""

    cache: ParseCache
    files: list[tuple[str, Entry]]
    errors: list[AdrParseError]
    finish: Callable[[list[Adr]], list[Adr]]  # dedupe_ids: what the loader does after parsing

    def hashes(self) -> dict[str, str]:
        return {rel: str(e["sha256"]) for rel, e in self.files if "error" not in e}

    @functools.cached_property
    def adrs(self) -> list[Adr]:
        return self.finish([self.cache.adr(rel, e) for rel, e in self.files if "error" not in e])

    def parse_of(self, rel: str, sha256: str) -> Adr | None:
        """The cached parse of the file at `rel` when it holds these bytes (their SHA-256): what
        `parse_adr(rel, data)` gives, before the folder's ids are made unique. None otherwise."""
        entry = dict(self.files).get(rel)
        if entry is None or "error" in entry or entry.get("sha256") != sha256:
            return None
        try:
            return self.cache.adr(rel, entry)
        except (KeyError, TypeError, ValueError):
            return None  # a bad cache entry: the caller parses the bytes


def unchanged_folder(
    files: list[tuple[Path, str]],
    scan_errors: list[AdrParseError],
    cache: ParseCache,
    finish: Callable[[list[Adr]], list[Adr]],
) -> UnchangedFolder | None:
    """The folder as the cache last saw it when every listed file is trusted by size and mtime (or,
    modified just before the cache was written, holds the recorded bytes) and no recorded file is
    gone, else None (then load it the full way). Having hashed such a file, the manifest is written
    again, so that it is trusted without a read once its mtime is far enough behind."""
    hits: list[tuple[str, Entry]] = []
    racy = False
    for path, rel in files:
        try:
            st = path.stat()
        except OSError:
            return None
        hit = cache.trusted(rel, st)
        if hit is None:
            hit = cache.racily_same(path, rel, st)
            racy = True
        if hit is None:
            return None
        hits.append((rel, hit))
    if len(hits) != len(cache.entries):
        return None
    if racy:
        cache.save()
    errors = list(scan_errors) + [AdrParseError(rel, str(e["error"])) for rel, e in hits if "error" in e]
    return UnchangedFolder(cache, hits, errors, finish)


def adr_of(rel: str, sha256: str, compact: Mapping[str, Any]) -> Adr:
    data = dict(compact)
    text = data["text"]
    data["sections"] = {
        name: text[span[0] : span[1]] if isinstance(span, list) else span
        for name, span in data["sections"].items()
    }
    data["path"], data["content_hash"] = rel, sha256
    converters = _converters()
    if converters is None:
        return from_dict(Adr, data)
    return Adr(**{name: convert(data[name]) for name, convert in converters.items() if name in data})


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _span(text: str, body: str) -> list[int] | str:
    at = text.find(body)
    return [at, at + len(body)] if at >= 0 else body


def _stat(st: os.stat_result | None) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns} if st is not None else {}


def _same(value: Any) -> Any:
    return value


@functools.cache
def _converters() -> dict[str, Callable[[Any], Any]] | None:
    """JSON value -> field value, per field of Adr, for the shapes it has (serde's from_dict is
    generic and slow: it was most of a no-op refresh); None when a field has another shape."""
    hints = typing.get_type_hints(Adr)
    out: dict[str, Callable[[Any], Any]] = {}
    for f in dataclasses.fields(Adr):
        tp = hints[f.name]
        origin, args = get_origin(tp), get_args(tp)
        scalars = (str, int, float, bool, type(None))
        if tp in scalars or origin is Literal or (origin in (Union, UnionType) and set(args) <= set(scalars)):
            out[f.name] = _same
        elif origin in (Mapping, dict) and args == (str, str):
            out[f.name] = dict
        elif origin is tuple and args == (str, ...):
            out[f.name] = tuple
        elif origin is tuple and len(args) == 2 and args[1] is ... and _flat_record(args[0]):
            out[f.name] = functools.partial(_records, args[0])
        else:
            return None
    return out


def _flat_record(cls: Any) -> bool:
    """A dataclass of strings only (AdrLink): its JSON object is its keyword arguments."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        return False
    hints = typing.get_type_hints(cls)
    return all(hints[f.name] is str or get_origin(hints[f.name]) is Literal for f in dataclasses.fields(cls))


def _records(cls: Any, values: Any) -> tuple[Any, ...]:
    if not isinstance(values, list):
        raise TypeError(f"{cls.__name__}: not a list")
    return tuple(cls(**v) for v in values)
