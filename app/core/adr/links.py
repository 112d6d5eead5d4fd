"""Typed links to other ADRs: front matter relations, relation phrases in prose ("Superseded by
ADR-0012", "ADR-0003 により上書き"), then every other `ADR-N` mention and link to a sibling file."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any, Literal

from app.core.adr.blocks import strip_code
from app.core.adr.fields import ID_KEY, canonical_id_key, format_id, id_from_filename, str_value
from app.core.adr.model import AdrLink, LinkKind
from app.core.adr.vocabulary import FRONT_MATTER_RELATIONS, RELATION_PHRASES

# Bounds that keep a hostile 1 MB file linear: relation phrases are read in the first part of a line,
# and one ADR yields at most this many links.
MAX_LINE_FOR_LINKS = 2_000
MAX_LINKS = 200

_ADR_MENTION = re.compile(
    r"(?<![\w/-])(?:M?ADR)[\s_-]?(\d{8}-\d{1,3}|\d{1,5})(?![\w])(?!\.md)", re.IGNORECASE
)
_MD_LINK = re.compile(r"\[([^\[\]\n]{0,300})\]\(\s*<?([^()\[\]\s<>]{1,400})>?(?:\s+\"[^\"\n]{0,200}\")?\s*\)")
_REF_DEF = re.compile(r"^[ \t]*\[[^\[\]\n]{1,200}\]:[ \t]*<?([^\s<>]{1,400}?)>?(?:[ \t]+.*)?$", re.MULTILINE)
_TYPED_PHRASES: tuple[tuple[re.Pattern[str], LinkKind, Literal["after", "before"]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), kind, where) for pattern, kind, where in RELATION_PHRASES
)
_ANY_TYPED = re.compile("|".join(f"(?:{p.pattern})" for p, _k, _w in _TYPED_PHRASES), re.IGNORECASE)
_SEGMENT_STOP = re.compile(r"[。;；\n]|\.\s|\s[(（]|（|\b[A-Za-z][\w ]{0,20}:\s|[^\x00-\x7f\s]{1,8}[:：]")
_NEGATED = re.compile(r"\b(?:not|never|n't)\b[\w ]{0,16}$", re.IGNORECASE)
_LINK_MASK = re.compile(r"\[[^\[\]\n]{0,300}\]\([^()\s]{0,400}\)")
_KIND_RANK: Mapping[str, int] = {"related": 0, "supersedes": 1, "superseded_by": 2}


def _typed_targets(path: str, line: str) -> list[tuple[LinkKind, str]]:
    """Targets named next to a relation phrase: after "Superseded by", before "により上書き"."""
    out: list[tuple[LinkKind, str]] = []
    line = line[:MAX_LINE_FOR_LINKS]
    masked = _LINK_MASK.sub(lambda m: "L" * len(m.group(0)), line)
    for pattern, kind, where in _TYPED_PHRASES:
        for m in pattern.finditer(masked):
            if _NEGATED.search(masked, max(0, m.start() - 30), m.start()):
                continue  # "does not directly supersede ADR23"
            if where == "after":
                seg_start, seg_end = m.end(), min(len(line), m.end() + 240)
                stop = _SEGMENT_STOP.search(masked, seg_start, seg_end)
                if stop and stop.start() > seg_start:
                    seg_end = stop.start()
                segment = line[seg_start:seg_end]
                found = _ids_in(segment) + _sibling_targets(path, segment)
            else:
                seg_start = max(0, m.start() - 160)
                stops = list(_SEGMENT_STOP.finditer(masked, seg_start, m.start()))
                if stops:
                    seg_start = stops[-1].end()
                segment = line[seg_start : m.start()]
                cands = [
                    (mm.start(), t) for mm in _ADR_MENTION.finditer(segment) if (t := format_id(mm.group(1)))
                ]
                cands += [
                    (mm.start(), t)
                    for mm in _MD_LINK.finditer(segment)
                    for t in _sibling_targets(path, mm.group(0))
                ]
                found = [max(cands)[1]] if cands else []
            out.extend((kind, t) for t in found)
    return out


def _ids_in(text: str) -> list[str]:
    out = []
    for m in _ADR_MENTION.finditer(text):
        fid = format_id(m.group(1))
        if fid:
            out.append(fid)
    return out


def _sibling_targets(path: str, text: str) -> list[str]:
    """Markdown links (inline and reference definitions) to other .md files, resolved to folder paths."""
    base = posixpath.dirname(path)
    out: list[str] = []
    targets = [m.group(2) for m in _MD_LINK.finditer(text)] + [m.group(1) for m in _REF_DEF.finditer(text)]
    for raw in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", raw, re.IGNORECASE) or raw.startswith("#"):
            continue  # URLs and anchors
        target = raw.split("#")[0].split("?")[0]
        if not re.search(r"\.(md|markdown)$", target, re.IGNORECASE):
            continue
        if target.startswith("/"):
            resolved = target.lstrip("/")
        else:
            resolved = (
                posixpath.normpath(posixpath.join(base, target)) if base else posixpath.normpath(target)
            )
        if resolved.startswith("../") or resolved == "..":
            resolved = posixpath.basename(target)
        out.append(resolved)
    return out


def find_links(
    path: str,
    adr_id: str,
    front: Mapping[str, Any],
    status_lines: list[str],
    meta: Mapping[str, str],
    body: str,
) -> tuple[AdrLink, ...]:
    own = canonical_id_key(adr_id)
    own_path = path
    typed: dict[str, LinkKind] = {}
    order: list[str] = []

    def add(kind: LinkKind, target: str) -> None:
        key = canonical_id_key(target) if ID_KEY.match(target) else target
        if key in (own, own_path):
            return
        if key in typed:
            if typed[key] == "related" and kind != "related":
                typed[key] = kind
            return
        typed[key] = kind
        order.append(key)
        targets[key] = target

    targets: dict[str, str] = {}

    for key, kind in FRONT_MATTER_RELATIONS.items():
        value = front.get(key)
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, dict):
                v = v.get("id") or v.get("adr") or next(iter(v.values()), None)
            s = str_value(v)
            if not s:
                continue
            ids = _ids_in(s)
            if ids:
                for i in ids:
                    add(kind, i)
            elif re.search(r"\.(md|markdown)$", s):
                add(kind, s)

    for line in [*status_lines, *strip_code(body).split("\n")]:
        if _ANY_TYPED.search(line):
            for kind, target in _typed_targets(path, line):
                add(kind, target)
    # Everything else mentioned, in reading order: "ADR-N" mentions and links to sibling files.
    body_nocode = strip_code(body)
    mentions = [(m.start(), t) for m in _ADR_MENTION.finditer(body_nocode) if (t := format_id(m.group(1)))]
    for m in _MD_LINK.finditer(body_nocode):
        mentions += [(m.start(), t) for t in _sibling_targets(path, m.group(0))]
    for m in _REF_DEF.finditer(body_nocode):
        mentions += [(m.start(), t) for t in _sibling_targets(path, m.group(0))]
    for _pos, target in sorted(mentions, key=lambda x: x[0]):
        if len(order) >= MAX_LINKS:
            break
        add("related", target)
    return _merge_file_and_id_links([(typed[k], targets[k]) for k in order])


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
