"""ADR markdown (or the seeds' plain text) -> Adr. Pure: takes bytes, returns a frozen value or raises
AdrParseError.

Formats seen in the wild and handled here: MADR (`* Status:` bullets, Considered Options, Decision
Outcome), Nygard / Tendermint (`## Status`, `## Context`, `## Changelog`), YAML front matter with typed
relations (karasu: `supersedes`, `superseded_by`, `related_to`, `depends_on`, `refines`), NATS metadata
tables (`|Status|Implemented|`), and plain-text exports (bare heading lines such as "コンテキスト",
"§1.1 背景", `• Status:` bullets, web-page chrome before the `ADR-0116: ...` title line).

Also: adr-tools' own output ("Superceded by"), MADR 3/4, log4brains, `<slug>/index.md` folders, dated
file names (`2025-01-15-foo.md`, `20201016-foo.md`, `2024031501-foo.md`) and Japanese status words
under negation (未承認, 承認待ち, 未決定 are not accepted).

The modules, in the order a file goes through them: parse (bytes -> text, the entry point),
front_matter (YAML, bounded), markdown (markdown-it-py tokens -> blocks of visible text, within a
budget: the one Markdown boundary), sections, names (ids and dates from file names), fields (title,
metadata, status, date), summary, links; reader gives the text a reader sees (`reader_blocks`, what
quotes are verified against); vocabulary holds the word tables as data and model the values.
"""

from adr_review.core.adr.fields import normalize_status
from adr_review.core.adr.model import Adr, AdrLink, AdrParseError, Language, LinkKind, Status
from adr_review.core.adr.names import canonical_id_key, fold_id
from adr_review.core.adr.parse import decode_adr_bytes, parse_adr
from adr_review.core.adr.reader import (
    ReaderBlock,
    ReaderKind,
    is_markdown_path,
    reader_blocks,
    text_reader_blocks,
)
from adr_review.core.adr.sections import strip_list_marker
from adr_review.core.adr.vocabulary import (
    FALLBACK_HEADINGS,
    FRONT_MATTER_RELATIONS,
    META_HEADINGS,
    META_LABELS,
    RELATION_PHRASES,
    SECTION_HEADINGS,
    SECTIONS,
    STATUS_WORDS,
)

__all__ = [
    "FALLBACK_HEADINGS",
    "FRONT_MATTER_RELATIONS",
    "META_HEADINGS",
    "META_LABELS",
    "RELATION_PHRASES",
    "SECTIONS",
    "SECTION_HEADINGS",
    "STATUS_WORDS",
    "Adr",
    "AdrLink",
    "AdrParseError",
    "Language",
    "LinkKind",
    "ReaderBlock",
    "ReaderKind",
    "Status",
    "canonical_id_key",
    "fold_id",
    "decode_adr_bytes",
    "is_markdown_path",
    "normalize_status",
    "parse_adr",
    "reader_blocks",
    "strip_list_marker",
    "text_reader_blocks",
]
