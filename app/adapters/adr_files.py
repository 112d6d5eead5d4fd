"""Read an ADR folder from disk: every markdown file parsed, bad ones reported, ids made unique.

Id rule: inside one folder the first file (by sorted relative path) keeps its canonical id; a later
file whose id collides gets a letter suffix, "ADR-0095" -> "ADR-0095-b", then "-c", ... The suffix is
not numeric, so canonical_id_key() keeps it distinct ("adr-0095-b") instead of collapsing it onto the
first file. Real corpora need this: Kuma reused numbers 095, 096, 100 and 103.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import string
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from app.core.adr import Adr, AdrParseError, canonical_id_key, parse_adr
from app.core.adr_paths import is_adr_candidate
from app.core.serde import SerdeError, from_dict, to_dict

DEFAULT_PATTERNS = ("**/*.md", "**/*.markdown")


def read_adr_file(path: Path, rel: str, *, max_bytes: int = 1_000_000) -> Adr:
    """One file; OS errors become AdrParseError so a run can report them like parse errors."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise AdrParseError(rel, f"file too large ({size} bytes > limit {max_bytes})")
        data = path.read_bytes()
    except OSError as exc:
        raise AdrParseError(rel, f"cannot read file ({exc.strerror or exc})") from None
    return parse_adr(rel, data, max_bytes=max_bytes)


def list_adr_files(root: Path, patterns: Iterable[str] = DEFAULT_PATTERNS) -> list[tuple[Path, str]]:
    seen: dict[str, Path] = {}
    for pattern in patterns:
        for p in root.glob(pattern):
            if not p.is_file():
                continue
            rel = p.relative_to(root).as_posix()
            if is_adr_candidate(rel):
                seen.setdefault(rel, p)
    return [(seen[rel], rel) for rel in sorted(seen)]


def load_adr_folder(
    root: Path, *, patterns: Iterable[str] = DEFAULT_PATTERNS, max_bytes: int = 1_000_000
) -> tuple[list[Adr], list[AdrParseError]]:
    """All ADRs under root (sorted by relative path) and one error per file that could not be read."""
    adrs: list[Adr] = []
    errors: list[AdrParseError] = []
    if not root.is_dir():
        return [], [AdrParseError(str(root), "ADR folder does not exist")]
    for path, rel in list_adr_files(root, patterns):
        try:
            adrs.append(read_adr_file(path, rel, max_bytes=max_bytes))
        except AdrParseError as exc:
            errors.append(exc)
    return dedupe_ids(adrs), errors


def dedupe_ids(adrs: list[Adr]) -> list[Adr]:
    """Make ids unique: the first keeps its id, later duplicates get "-b", "-c", ... (see module doc)."""
    taken = {canonical_id_key(a.adr_id) for a in adrs}
    seen: set[str] = set()
    out: list[Adr] = []
    for adr in adrs:
        key = canonical_id_key(adr.adr_id)
        if key not in seen:
            seen.add(key)
            out.append(adr)
            continue
        new_id = _next_free(adr.adr_id, taken)
        taken.add(canonical_id_key(new_id))
        seen.add(canonical_id_key(new_id))
        extra = {**adr.extra, "original_id": adr.adr_id}
        out.append(dataclasses.replace(adr, adr_id=new_id, extra=extra))
    return out


def _next_free(adr_id: str, taken: set[str]) -> str:
    for letter in string.ascii_lowercase[1:]:
        cand = f"{adr_id}-{letter}"
        if canonical_id_key(cand) not in taken:
            return cand
    n = 2
    while canonical_id_key(f"{adr_id}-x{n}") in taken:
        n += 1
    return f"{adr_id}-x{n}"


def load_adr_folder_cached(
    root: Path, cache_file: Path | None = None
) -> tuple[list[Adr], list[AdrParseError]]:
    """`load_adr_folder`, reusing earlier parses of unchanged files (same bytes, same parser): the
    parses are kept in `cache_file` (JSON, beside the index) by content hash."""
    if cache_file is None or not root.is_dir():
        return load_adr_folder(root)
    version = _parser_version()
    cached: dict[str, Any] = {}
    try:
        raw = json.loads(cache_file.read_text(encoding="utf-8"))
        if raw.get("parser") == version:
            cached = raw.get("files", {})
    except (OSError, ValueError, AttributeError):
        cached = {}
    adrs: list[Adr] = []
    errors: list[AdrParseError] = []
    fresh: dict[str, Any] = {}
    for path, rel in list_adr_files(root):
        try:
            data = path.read_bytes()
        except OSError:
            data = None
        digest = hashlib.sha256(data).hexdigest() if data is not None else ""
        hit = cached.get(rel)
        if data is not None and hit and hit.get("sha256") == digest:
            try:
                if "error" in hit:
                    errors.append(AdrParseError(rel, str(hit["error"])))
                else:
                    adrs.append(from_dict(Adr, hit["adr"]))
                fresh[rel] = hit
                continue
            except (SerdeError, KeyError, TypeError):
                pass
        try:
            adr = read_adr_file(path, rel)
            adrs.append(adr)
            fresh[rel] = {"sha256": digest, "adr": to_dict(adr)}
        except AdrParseError as exc:
            errors.append(exc)
            if digest:
                fresh[rel] = {"sha256": digest, "error": exc.reason}
    if fresh != cached:
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache_file.with_suffix(".tmp")
            tmp.write_text(
                json.dumps({"parser": version, "files": fresh}, ensure_ascii=False), encoding="utf-8"
            )
            tmp.replace(cache_file)
        except OSError:
            pass  # a cache that cannot be written only costs time
    return dedupe_ids(adrs), errors


def _parser_version() -> str:
    """Hash of the parser's source: any change to parsing invalidates the cache."""
    from app.core import adr, text

    h = hashlib.sha256()
    parser = sorted(Path(str(adr.__file__)).parent.glob("*.py"))  # every module of the package
    for source in (*parser, __file__, text.__file__):
        h.update(Path(str(source)).read_bytes())
    return h.hexdigest()[:16]
