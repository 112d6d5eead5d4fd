"""The values the ADR parser produces: the frozen `Adr`, its typed links, the per-file error, and the
`Heading` that the Markdown reader (or the plain-text heading scan) hands to the field extractors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

LinkKind = Literal["supersedes", "superseded_by", "related"]
Status = Literal["proposed", "accepted", "deprecated", "superseded", "rejected", "unknown"]
Language = Literal["en", "ja"]


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
    # What the parser had to decide and a user should hear about (an id clash, markup read as plain
    # text past the budget, front matter that is not valid YAML); the folder loaders report them.
    notes: tuple[str, ...] = ()


class AdrParseError(ValueError):
    """A file that cannot be read as an ADR; carries the path so a run can report and continue."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class Heading:
    """One heading as the Markdown reader found it; the only shape the field extractors rely on."""

    line: int  # index of the heading line (for setext: the text line)
    end: int  # first line after the heading markup
    level: int
    text: str
    markdown: bool  # False: a bare heading line of a plain-text export
