"""Typed links to other ADRs: front matter relations, relation phrases in the text ("Superseded by
ADR-0012", "Superceded by [3. Foo](0003-foo.md)", "ADR-0003 により上書き"), then every other `ADR-N`
mention and link to a sibling file, in reading order.

Read from the text a reader sees (markdown.py's runs): nothing from code spans, code blocks or HTML
comments, and link targets only from real links (inline, reference-style, autolinks). A mention
followed by ".<digit>" is a version number ("MADR 4.0.0"), not an ADR.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from adr_review.core.adr.fields import str_value
from adr_review.core.adr.markdown import Block
from adr_review.core.adr.model import AdrLink, LinkKind
from adr_review.core.adr.names import ID_KEY, canonical_id_key, format_id, id_from_filename
from adr_review.core.adr.vocabulary import FRONT_MATTER_RELATIONS, RELATION_HINTS, RELATION_PHRASES

# Bounds that keep a hostile 1 MB file linear: relation phrases are read in the first part of a line,
# and one ADR yields at most this many links.
MAX_LINE_FOR_LINKS = 2_000
MAX_LINKS = 200

_ADR_MENTION = re.compile(
    r"(?<![\w/-])(?:M?ADR)[\s_-]?(\d{8}-\d{1,3}|\d{1,5})(?![\w])(?!\.md)(?!\.\d)", re.IGNORECASE
)
_MENTION_HINT = "adr"  # in every mention, case-folded: a line without it is not searched
_TYPED_PHRASES: tuple[tuple[re.Pattern[str], LinkKind, Literal["after", "before"]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), kind, where) for pattern, kind, where in RELATION_PHRASES
)
_ANY_TYPED = re.compile("|".join(f"(?:{p.pattern})" for p, _k, _w in _TYPED_PHRASES), re.IGNORECASE)
_SEGMENT_STOP = re.compile(r"[。;；\n]|\.\s|\s[(（]|（|\b[A-Za-z][\w ]{0,20}:\s|[^\x00-\x7f\s]{1,8}[:：]")
_NEGATED = re.compile(r"\b(?:not|never|n't)\b[\w ]{0,16}$", re.IGNORECASE)
_KIND_RANK: Mapping[str, int] = {"related": 0, "supersedes": 1, "superseded_by": 2}


@dataclass(frozen=True)
class _Line:
    """One line of a block as links read it: the visible text with code blanked (`text`), the same
    with link text masked (`masked`: phrases and stops are not looked for inside a link), and the
    links as (start, end, target) in those coordinates."""

    text: str
    masked: str
    links: tuple[tuple[int, int, str], ...]


def _lines(block: Block) -> Iterator[_Line]:
    if len(block.runs) == 1 and not block.runs[0].code and block.runs[0].href is None:
        for piece in block.runs[0].text.split("\n"):
            yield _Line(piece, piece, ())
        return
    text: list[str] = []
    masked: list[str] = []
    links: list[tuple[int, int, str]] = []
    pos = 0

    def flush() -> _Line:
        return _Line("".join(text), "".join(masked), tuple(links))

    for run in block.runs:
        for i, piece in enumerate(run.text.split("\n")):
            if i:
                yield flush()
                text, masked, links, pos = [], [], [], 0
            shown = " " * len(piece) if run.code else piece
            text.append(shown)
            masked.append("L" * len(piece) if run.href is not None else shown)
            if run.href is not None and piece:
                links.append((pos, pos + len(piece), run.href))
            pos += len(piece)
    yield flush()


def _sibling_target(path: str, raw: str) -> str | None:
    """A link target that names another Markdown file, resolved to a folder path."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", raw, re.IGNORECASE) or raw.startswith("#"):
        return None  # URLs and anchors
    target = raw.split("#")[0].split("?")[0]
    if not re.search(r"\.(md|markdown)$", target, re.IGNORECASE):
        return None
    base = posixpath.dirname(path)
    if target.startswith("/"):
        resolved = target.lstrip("/")
    else:
        resolved = posixpath.normpath(posixpath.join(base, target)) if base else posixpath.normpath(target)
    if resolved.startswith("../") or resolved == "..":
        resolved = posixpath.basename(target)
    return resolved


def _ids_in(text: str) -> list[tuple[int, str]]:
    return [(m.start(), t) for m in _ADR_MENTION.finditer(text) if (t := format_id(m.group(1)))]


def _typed_targets(path: str, line: _Line) -> list[tuple[LinkKind, str]]:
    """Targets named next to a relation phrase: after "Superseded by", before "により上書き"."""
    out: list[tuple[LinkKind, str]] = []
    text, masked = line.text[:MAX_LINE_FOR_LINKS], line.masked[:MAX_LINE_FOR_LINKS]
    for pattern, kind, where in _TYPED_PHRASES:
        for m in pattern.finditer(masked):
            if _NEGATED.search(masked, max(0, m.start() - 30), m.start()):
                continue  # "does not directly supersede ADR23"
            if where == "after":
                seg_start, seg_end = m.end(), min(len(text), m.end() + 240)
                stop = _SEGMENT_STOP.search(masked, seg_start, seg_end)
                if stop and stop.start() > seg_start:
                    seg_end = stop.start()
                found = [t for _p, t in _ids_in(text[seg_start:seg_end])]
                found += [
                    t
                    for a, _z, href in line.links
                    if seg_start <= a < seg_end
                    if (t := _sibling_target(path, href))
                ]
            else:
                seg_start = max(0, m.start() - 160)
                stops = list(_SEGMENT_STOP.finditer(masked, seg_start, m.start()))
                if stops:
                    seg_start = stops[-1].end()
                cands = [(seg_start + p, t) for p, t in _ids_in(text[seg_start : m.start()])]
                cands += [
                    (a, t)
                    for a, _z, href in line.links
                    if seg_start <= a < m.start()
                    if (t := _sibling_target(path, href))
                ]
                found = [max(cands)[1]] if cands else []
            out.extend((kind, t) for t in found)
    return out


def find_links(
    path: str,
    adr_id: str,
    front: Mapping[str, Any],
    status_texts: Sequence[str],
    blocks: Sequence[Block],
) -> tuple[AdrLink, ...]:
    own = canonical_id_key(adr_id)
    typed: dict[str, LinkKind] = {}
    targets: dict[str, str] = {}
    order: list[str] = []

    def add(kind: LinkKind, target: str) -> None:
        key = canonical_id_key(target) if ID_KEY.match(target) else target
        if key in (own, path):
            return
        if key in typed:
            if typed[key] == "related" and kind != "related":
                typed[key] = kind
            return
        typed[key] = kind
        order.append(key)
        targets[key] = target

    for key, kind in FRONT_MATTER_RELATIONS.items():
        value = front.get(key)
        if value is None:
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, dict):
                v = v.get("id") or v.get("adr") or next(iter(v.values()), None)
            s = str_value(v)
            if not s:
                continue
            ids = _ids_in(s[:MAX_LINE_FOR_LINKS])
            for _p, i in ids:
                add(kind, i)
            if not ids and re.search(r"\.(md|markdown)$", s):
                add(kind, s)

    prose = [b for b in blocks if b.kind != "code"]
    lines = [_Line(t, t, ()) for t in status_texts] + [ln for b in prose for ln in _lines(b)]
    masked = "\x00".join(line.masked for line in lines).casefold()
    if any(hint in masked for hint in RELATION_HINTS):  # most ADRs have no relation phrase at all
        for line in lines:
            if _ANY_TYPED.search(line.masked[:MAX_LINE_FOR_LINKS]):
                for kind, target in _typed_targets(path, line):
                    add(kind, target)
    # Everything else mentioned, in reading order: "ADR-N" mentions and links to sibling files.
    for line in lines[len(status_texts) :]:
        if len(order) >= MAX_LINKS:
            break
        mentions = _ids_in(line.text) if _MENTION_HINT in line.text.casefold() else []
        mentions += [(a, t) for a, _z, href in line.links if (t := _sibling_target(path, href))]
        for _pos, target in sorted(mentions, key=lambda x: x[0]):
            add("related", target)
    return _merge_file_and_id_links([(typed[k], targets[k]) for k in order[:MAX_LINKS]])


def _merge_file_and_id_links(links: list[tuple[LinkKind, str]]) -> tuple[AdrLink, ...]:
    """ "[MADR 099](099-foo.md)" is one relation, not two: keep the file target, the stronger kind."""
    file_ids: dict[str, str] = {}
    for _kind, target in links:
        if target.endswith((".md", ".markdown")):
            fid = id_from_filename(target)[0]
            if fid:
                file_ids.setdefault(canonical_id_key(fid), target)
    merged: dict[str, LinkKind] = {}
    order: list[str] = []
    for kind, target in links:
        if not target.endswith((".md", ".markdown")):
            target = file_ids.get(canonical_id_key(target), target)
        if target in merged:
            if _KIND_RANK[kind] > _KIND_RANK[merged[target]]:
                merged[target] = kind
            continue
        merged[target] = kind
        order.append(target)
    return tuple(AdrLink(merged[t], t) for t in order)
