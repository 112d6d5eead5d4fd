"""Read an ADR folder from disk: every markdown file parsed, bad ones reported, ids made unique.

Id rule: inside one folder the first file (by sorted relative path) keeps its canonical id; a later
file whose id collides gets a letter suffix, "ADR-0095" -> "ADR-0095-b", then "-c", ... The suffix is
not numeric, so canonical_id_key() keeps it distinct ("adr-0095-b") instead of collapsing it onto the
first file. Real corpora need this: Kuma reused numbers 095, 096, 100 and 103.
"""

from __future__ import annotations

import dataclasses
import re
import string
from collections.abc import Iterable
from pathlib import Path

from app.core.adr import Adr, AdrParseError, canonical_id_key, parse_adr

DEFAULT_PATTERNS = ("**/*.md", "**/*.markdown")

# Files that live in ADR folders but are not ADRs (compared case-insensitively on the file name).
SKIP_NAMES = frozenset({"readme.md", "index.md", "readme.markdown", "index.markdown", "summary.md", "toc.md"})
_TEMPLATE = re.compile(r"(^|[-_.\s])template([-_.\s]|$)", re.IGNORECASE)


def is_adr_candidate(rel: str) -> bool:
    """False for READMEs, indexes, templates and anything under a hidden directory."""
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts[:-1]) or parts[-1].startswith("."):
        return False
    name = parts[-1].casefold()
    if name in SKIP_NAMES:
        return False
    stem = name.rsplit(".", 1)[0]
    return not _TEMPLATE.search(stem)


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
