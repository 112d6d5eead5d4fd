"""What the tool understood of an ADR folder (`adr-review list`): every ADR it read, with its id,
title, status, date, language and supersession links resolved to the folder's ids, and every file it
did not read as an ADR with the reason. Pure: the caller lists and reads the folder.

The JSON form is one list whose entries all have the same keys: an ADR has `skipped: null`, a skipped
file has `skipped: "<reason>"` and null id, title, status, date and language, so
`jq '.[] | select(.skipped == null)'` gives the ADRs and `select(.skipped)` the rest.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from adr_review.core.adr import Adr
from adr_review.core.adr_paths import SKIP_STEMS, is_adr_candidate, is_markdown, select_adr_files
from adr_review.core.citations import resolve_target


@dataclass(frozen=True)
class Listed:
    adr: Adr
    supersedes: tuple[str, ...]
    superseded_by: tuple[str, ...]
    related: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


def why_not_an_adr(rel: str, selected: set[str]) -> str | None:
    """Why `rel` is not read as an ADR by its name (app/adr_review/core/adr_paths.py decides), or None if it is
    one; `selected` is select_adr_files() of the folder's Markdown files."""
    if rel in selected:
        return None
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts):
        return "hidden (a dot file or folder): not read"
    if not is_markdown(rel):
        return "not Markdown"
    if not is_adr_candidate(rel):
        name = parts[-1]
        if name.rsplit(".", 1)[0].casefold() in SKIP_STEMS:
            return f"not an ADR by its name ({name}: a README, index, licence or similar page)"
        return "a template, by its name"
    return f"an attachment of the ADR in {posixpath.dirname(rel)}/ (a folder named like an ADR)"


def list_folder(
    adrs: Sequence[Adr], errors: Iterable[tuple[str, str]], listing: Sequence[str]
) -> tuple[list[Listed], list[Skipped]]:
    """The ADRs (in the order given) with their links resolved to the folder's ids (supersession both
    ways: from the ADR's own links and from the others' `supersedes`), and the skipped files
    (read errors, refused symlinks, the files not read as ADRs by their name), sorted by path."""
    listed = []
    for adr in adrs:
        supersedes = _unique(resolve_target(lk.target, adrs) for lk in adr.links if lk.kind == "supersedes")
        successors = [resolve_target(lk.target, adrs) for lk in adr.links if lk.kind == "superseded_by"]
        successors += [other.adr_id for other in adrs if other.path != adr.path and _names(other, adr)]
        related = _unique(resolve_target(lk.target, adrs) for lk in adr.links if lk.kind == "related")
        listed.append(Listed(adr, supersedes, _unique(successors), related))
    skipped = {path: Skipped(path, reason) for path, reason in errors}
    read = {a.path for a in adrs}
    selected = set(select_adr_files([p for p in listing if is_markdown(p)]))
    for rel in listing:
        if rel in read or rel in skipped:
            continue
        reason = why_not_an_adr(rel, selected)
        if reason:
            skipped[rel] = Skipped(rel, reason)
    return listed, [skipped[p] for p in sorted(skipped)]


def _names(other: Adr, adr: Adr) -> bool:
    """`other` says it supersedes `adr` (by id or by file name)."""
    return any(
        lk.kind == "supersedes" and resolve_target(lk.target, [adr]) == adr.adr_id for lk in other.links
    )


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def as_json(listed: Sequence[Listed], skipped: Sequence[Skipped]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for entry in listed:
        a = entry.adr
        out.append(
            {
                "id": a.adr_id,
                "path": a.path,
                "title": a.title,
                "status": a.status,
                "raw_status": a.raw_status,
                "date": a.date,
                "language": a.language,
                "supersedes": list(entry.supersedes),
                "superseded_by": list(entry.superseded_by),
                "related": list(entry.related),
                "notes": list(a.notes),
                "skipped": None,
            }
        )
    for s in skipped:
        out.append(
            dict.fromkeys(("id", "title", "status", "raw_status", "date", "language"))
            | {"path": s.path, "supersedes": [], "superseded_by": [], "related": [], "notes": []}
            | {"skipped": s.reason}
        )
    return out


def as_text(listed: Sequence[Listed], skipped: Sequence[Skipped]) -> str:
    """One line per ADR (id, status, date, language, path, then the title and relations: the free
    text last, so no column depends on how wide its characters are), then what was skipped and the
    parser's notes."""
    rows = [
        (
            e.adr.adr_id,
            e.adr.status,
            e.adr.date or "-",
            e.adr.language,
            e.adr.path,
            _clip(e.adr.title, 80) + _relations(e),
        )
        for e in listed
    ]
    widths = [max([len(r[i]) for r in rows] + [0]) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5] for r in rows]
    counts = Counter(e.adr.status for e in listed)
    summary = ", ".join(f"{n} {status}" for status, n in counts.most_common())
    lines.append(f"{len(listed)} ADR(s) read: {summary}" if listed else "no ADRs read")
    if skipped:
        lines.append(f"{len(skipped)} file(s) skipped:")
        lines += [f"  {s.path}: {s.reason}" for s in skipped]
    notes = [(e.adr.path, n) for e in listed for n in e.adr.notes]
    if notes:
        lines.append(f"{len(notes)} note(s) from reading the ADRs:")
        lines += [f"  {path}: {note}" for path, note in notes]
    return "\n".join(lines)


def _relations(entry: Listed) -> str:
    parts = []
    if entry.supersedes:
        parts.append("supersedes " + ", ".join(entry.supersedes))
    if entry.superseded_by:
        parts.append("superseded by " + ", ".join(entry.superseded_by))
    return f" ({'; '.join(parts)})" if parts else ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
