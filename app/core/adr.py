"""ADR markdown -> Adr. Pure: takes bytes, returns a frozen value or raises AdrParseError.

IMPLEMENTATION IN PROGRESS (parser helper): the dataclasses and signatures below are the contract
that the rest of the package codes against.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

LinkKind = Literal["supersedes", "superseded_by", "related"]
Status = Literal["proposed", "accepted", "deprecated", "superseded", "rejected", "unknown"]
Language = Literal["en", "ja"]

# Canonical section names.
SECTIONS = ("context", "decision", "alternatives", "consequences", "risks", "rollback", "confirmation")


@dataclass(frozen=True)
class AdrLink:
    kind: LinkKind
    target: str  # an ADR id as written ("ADR-0012") or a file name ("0012-foo.md")


@dataclass(frozen=True)
class Adr:
    path: str  # path relative to the ADR folder, '/' separated; the unique key inside a folder
    adr_id: str  # "ADR-0071", "ADR-20260320-01", or derived from the file number
    title: str
    status: Status
    raw_status: str
    date: str | None
    sections: Mapping[str, str]  # canonical name -> text
    summary: str
    language: Language
    links: tuple[AdrLink, ...]
    text: str  # the whole decoded document
    content_hash: str  # sha256 of the raw bytes
    number: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)


class AdrParseError(ValueError):
    """A file that cannot be read as an ADR; carries the path so a run can report and continue."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


_ID_KEY = re.compile(r"^\s*adr[-_ ]?0*(\d+)((?:-\d+)*)\s*$", re.IGNORECASE)


def canonical_id_key(adr_id: str) -> str:
    """Comparison key for ids: case and zero-padding do not matter ("adr-71" == "ADR-0071")."""
    m = _ID_KEY.match(adr_id)
    if not m:
        return adr_id.strip().casefold()
    tail = "".join("-" + str(int(p)) for p in m.group(2).split("-") if p)
    return f"ADR-{int(m.group(1))}{tail}"
