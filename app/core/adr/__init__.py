"""ADR markdown (or the seeds' plain text) -> Adr. Pure: takes bytes, returns a frozen value or raises
AdrParseError.

Formats seen in the wild and handled here: MADR (`* Status:` bullets, Considered Options, Decision
Outcome), Nygard / Tendermint (`## Status`, `## Context`, `## Changelog`), YAML front matter with typed
relations (karasu: `supersedes`, `superseded_by`, `related_to`, `depends_on`, `refines`), NATS metadata
tables (`|Status|Implemented|`), and plain-text exports (bare heading lines such as "コンテキスト",
"§1.1 背景", `• Status:` bullets, web-page chrome before the `ADR-0116: ...` title line).

The modules, in the order a file goes through them: parse (bytes -> text, the entry point), blocks
(headings, code, paragraphs, inline markup: the one Markdown-scanning boundary), sections, fields (front
matter, id, title, metadata, status, date), summary, links; vocabulary holds the word tables as data and
model the values.
"""

from app.core.adr.fields import canonical_id_key, normalize_status
from app.core.adr.model import Adr, AdrLink, AdrParseError, Language, LinkKind, Status
from app.core.adr.parse import decode_adr_bytes, parse_adr
from app.core.adr.vocabulary import (
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
    "Status",
    "canonical_id_key",
    "decode_adr_bytes",
    "normalize_status",
    "parse_adr",
]
