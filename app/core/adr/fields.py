"""The fields of an ADR beside its prose: front matter, id and title, the metadata lines and tables of
the document head, status, date and the extra key/values."""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Mapping
from typing import Any

import yaml

from app.core.adr.blocks import clean_inline, paragraphs
from app.core.adr.model import Heading, Status
from app.core.adr.sections import heading_key, heading_section
from app.core.adr.vocabulary import FRONT_MATTER_RELATIONS, META_HEADINGS, META_LABELS, STATUS_WORDS

# --------------------------------------------------------------------------------------------------
# Front matter

_YamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body); a front matter YAML cannot load is read line by line as "key: value"."""
    m = _FRONT.match(text)
    if not m:
        return {}, text
    raw = m.group(1) or ""
    try:
        loaded = yaml.load(raw, Loader=_YamlLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError:
        loaded = _lenient_front_matter(raw)
    if not isinstance(loaded, dict):
        return {}, text
    return {str(k): v for k, v in loaded.items()}, text[m.end() :]


def _lenient_front_matter(raw: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for line in raw.split("\n"):
        m = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", line)
        if m and m.group(2).strip():
            out[m.group(1)] = m.group(2).strip().strip("'\"")
    return out


def str_value(value: Any) -> str | None:
    """A front matter value as one string ("a, b" for a list); None when empty."""
    if value is None:
        return None
    if isinstance(value, list | tuple):
        value = ", ".join(str(v) for v in value)
    s = str(value).strip()
    return s or None


# --------------------------------------------------------------------------------------------------
# Title and id

ID_KEY = re.compile(r"^\s*adr[-_ ]?0*(\d+)((?:-\d+)*)\s*$", re.IGNORECASE)
_TITLE_ID = re.compile(
    r"^\s*(?:\[)?M?ADR[\s_-]*(\d{8}-\d{1,3}|\d+)\]?\s*(?:[:：.\-–—|]\s*|\s+)(.*)$", re.IGNORECASE
)
_NUM_TITLE = re.compile(r"^\s*(\d{1,5})\s*[.:：)]\s+(.+)$")
_ADR_LINE = re.compile(r"^\s*ADR[-\s]?(\d{8}-\d{1,3}|\d+)\s*[:：]\s*\S")
_FILE_DATE_ID = re.compile(r"^(\d{8})-(\d{1,3})(?=[-_.]|$)")
_FILE_PREFIX = re.compile(r"^(?:\d{4}-\d{2}-\d{2}[_-])?(?:m?adr[-_ ]?)?(\d{1,5})(?=[-_. ]|$)", re.IGNORECASE)


def canonical_id_key(adr_id: str) -> str:
    """Comparison key for ids: case and zero-padding do not matter ("adr-71" == "ADR-0071")."""
    m = ID_KEY.match(adr_id)
    if not m:
        return adr_id.strip().casefold()
    tail = "".join("-" + str(int(p)) for p in m.group(2).split("-") if p)
    return f"ADR-{int(m.group(1))}{tail}"


def find_title(lines: list[str], blocks: list[Heading]) -> tuple[str | None, int | None]:
    """(title text, its line index): the first H1 that is not a section, else the seeds' "ADR-N:" line,
    else a single top heading at another level."""
    for h in blocks:
        if not h.markdown or h.level != 1:
            continue
        key = heading_key(h.text)
        if key in META_HEADINGS or heading_section(h.text)[0] is not None:
            continue
        return clean_inline(h.text), h.line
    # Plain text (the seeds): the "ADR-0071: ..." line, wherever chrome put it.
    for i, line in enumerate(lines[:80]):
        if _ADR_LINE.match(line):
            return line.strip(), i
    # A single top heading at another level (some docs start at ##).
    md = [h for h in blocks if h.markdown]
    if md:
        top = min(h.level for h in md)
        first = md[0]
        if (
            first.level == top
            and heading_section(first.text)[0] is None
            and heading_key(first.text) not in META_HEADINGS
            and sum(h.level == top for h in md) == 1
        ):
            return clean_inline(first.text), first.line
    return None, None


def split_title_id(title: str | None, file_number: int | None = None) -> tuple[str | None, str | None]:
    """ "ADR 004: Foo" -> ("ADR-0004", "Foo"); "2. Foo" too; "23 Logging" only when 23 is the file number."""
    if not title:
        return None, None
    title = title.strip()
    m = _TITLE_ID.match(title)
    if m and m.group(2).strip():
        return format_id(m.group(1)), m.group(2).strip()
    m = _NUM_TITLE.match(title)
    if m:
        return format_id(m.group(1)), m.group(2).strip()
    m = re.match(r"^(\d{1,5})\s+(\S.*)$", title)
    if m and file_number is not None and int(m.group(1)) == file_number:
        return format_id(m.group(1)), m.group(2).strip()
    return None, title


@functools.lru_cache(maxsize=4096)
def format_id(raw: str | None) -> str | None:
    """ "ADR 101" / "adr-0101" / "101" -> "ADR-0101"; date ids keep their shape ("ADR-20260320-01")."""
    if not raw:
        return None
    s = raw.strip()
    m = re.match(r"^(?:M?ADR)?[\s_-]*(\d{8})-(\d{1,3})$", s, re.IGNORECASE)
    if m:
        return f"ADR-{m.group(1)}-{m.group(2).zfill(2)}"
    m = re.match(r"^(?:M?ADR)?[\s_-]*(\d+)$", s, re.IGNORECASE)
    if m:
        return f"ADR-{int(m.group(1)):04d}"
    return s


def number_of(adr_id: str) -> int | None:
    m = re.match(r"^ADR-(\d+)$", adr_id)
    return int(m.group(1)) if m else None


def id_from_filename(path: str) -> tuple[str | None, int | None]:
    """(id, number) from the file name: "0012-foo.md" -> ("ADR-0012", 12); date ids have no number."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    m = _FILE_DATE_ID.match(stem)
    if m:
        return f"ADR-{m.group(1)}-{m.group(2).zfill(2)}", None
    m = _FILE_PREFIX.match(stem)
    if m:
        n = int(m.group(1))
        return f"ADR-{n:04d}", n
    return None, None


def title_from_filename(path: str) -> str:
    stem = posixpath.splitext(posixpath.basename(path))[0]
    stem = _FILE_DATE_ID.sub("", stem)
    stem = _FILE_PREFIX.sub("", stem)
    words = re.sub(r"[-_]+", " ", stem).strip()
    return (words[:1].upper() + words[1:]) if words else posixpath.basename(path)


# --------------------------------------------------------------------------------------------------
# Metadata lines: "* Status: accepted", "• Status: Accepted", "- **ステータス**: 決定済み",
# "Date: 05/02/2018", "|Status  |Implemented|"

META_LINE = re.compile(
    r"^\s*(?:[-*+•●・]\s*)?(?:\*\*|__)?([A-Za-z][A-Za-z ]{1,30}?|[^\x00-\x7f:：|]{1,12}?)"
    r"(?:\s*[(（][^)）]*[)）])?(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*(.+?)\s*$"
)
_TABLE_ROW = re.compile(r"^\s*\|\s*\**([^|*]+?)\**\s*\|\s*(.*?)\s*\|\s*$")


def collect_metadata(lines: list[str], blocks: list[Heading], *, start: int = 0) -> dict[str, str]:
    """First occurrence of each known label in the document head (before the first section)."""
    first_section = next(
        (h.line for h in blocks if h.line >= start and heading_section(h.text)[0] is not None),
        min(len(lines), start + 120),
    )
    meta: dict[str, str] = {}
    others: dict[str, str] = {}
    for line in lines[start:first_section]:
        m = _TABLE_ROW.match(line) or META_LINE.match(line)
        if not m:
            continue
        label_raw = m.group(1).strip()
        value = m.group(2).strip().strip("*_").strip()
        if not value or set(value) <= set("-: "):
            continue
        label = re.sub(r"\s*[(（].*$", "", label_raw).strip().casefold()
        fieldname = META_LABELS.get(label)
        if fieldname:
            meta.setdefault(fieldname, value)
        elif len(label_raw) <= 30 and not re.search(r"https?$", label_raw):
            others.setdefault(label_raw, value)
    for k, v in others.items():
        meta.setdefault("x:" + k, v)
    return meta


# --------------------------------------------------------------------------------------------------
# Status

_TEMPLATE_STATUS = re.compile(r"\{[^}]*\|[^}]*\}|^\s*\[?\s*\w+\s*\|\s*\w+\s*\|")


def normalize_status(raw: str) -> Status:
    """Earliest status keyword in the raw text; 'unknown' when none or an unfilled template."""
    if _TEMPLATE_STATUS.search(raw):
        return "unknown"
    s = clean_inline(raw).casefold().replace("-", " ")
    s = re.sub(r"\s+", " ", s)
    best: tuple[int, int, Status] | None = None
    for word, status in STATUS_WORDS.items():
        w = word.casefold().replace("-", " ")
        if w.isascii():
            m = re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", s)
            pos = m.start() if m else -1
        else:
            pos = s.find(w)
        if pos < 0:
            continue
        if status == "accepted" and re.search(r"\bnot\s+$", s[:pos]):
            continue
        cand = (pos, -len(w), status)
        if best is None or cand < best:
            best = cand
    return best[2] if best else "unknown"


def find_status(
    front: Mapping[str, Any], meta: Mapping[str, str], lines: list[str], blocks: list[Heading]
) -> tuple[str, Status]:
    """(raw status as written, normalised status) from front matter, metadata or a Status section."""
    candidates: list[str] = []
    section_status = _status_section_text(lines, blocks)
    if "status" in meta:
        candidates.append(meta["status"])
    if section_status:
        candidates.append(section_status)
    fm_status = str_value(front.get("status"))
    if fm_status is None and isinstance(front.get("tags"), list):
        tagged = [t for t in front["tags"] if normalize_status(str(t)) != "unknown"]
        fm_status = str(tagged[0]) if tagged else None
    # The typed front matter value decides; the human-written line is the raw status when it agrees
    # (karasu: "accepted" + "決定済み（実装済み — #1749）"), otherwise raw is what decided.
    body_status: tuple[str, Status] = (candidates[0], "unknown") if candidates else ("", "unknown")
    for c in candidates:
        st = normalize_status(c)
        if st != "unknown":
            body_status = (c, st)
            break
    fm_norm: Status = normalize_status(fm_status) if fm_status else "unknown"
    raw, status = body_status
    if fm_norm != "unknown" and status != fm_norm:
        raw, status = fm_status or "", fm_norm
    return clean_inline(raw[:600])[:300], status


def _status_section_text(lines: list[str], blocks: list[Heading]) -> str | None:
    for idx, h in enumerate(blocks):
        if heading_key(h.text) not in ("status", "ステータス", "状態"):
            continue
        end = blocks[idx + 1].line if idx + 1 < len(blocks) else len(lines)
        for para in paragraphs(lines[h.end : end]):
            if para.startswith(">") and len(para) > 60:
                continue  # template guidance quoted under the heading
            text = re.sub(r"^>\s*", "", para).strip()
            text = re.sub(r"^[-*+]\s+", "", text)
            if text:
                return clean_inline(text.split("\n")[0] if len(text) > 300 else text.replace("\n", " "))
    return None


# --------------------------------------------------------------------------------------------------
# Date

_ISO_DATE = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
_DMY_DATE = re.compile(r"\b(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})\b")


def _norm_date(raw: Any) -> str | None:
    if raw is None:
        return None
    s = str(raw).strip()
    m = _ISO_DATE.search(s)
    if m:
        return f"{m.group(1)}-{int(m.group(2)):02d}-{int(m.group(3)):02d}"
    m = _DMY_DATE.search(s)
    if m:
        # Teams writing dd/mm/yyyy (MoJ, Tendermint) outnumber mm/dd/yyyy ones in ADRs; a first field
        # above 12 settles it either way.
        day, month = int(m.group(1)), int(m.group(2))
        if month > 12 >= day:
            day, month = month, day
        if 1 <= month <= 12 and 1 <= day <= 31:
            return f"{m.group(3)}-{month:02d}-{day:02d}"
        return m.group(0)
    m = re.search(r"\b\d{4}-\d{2}\b", s)
    return m.group(0) if m else None


def find_date(
    front: Mapping[str, Any],
    meta: Mapping[str, str],
    lines: list[str],
    blocks: list[Heading],
    path: str,
) -> str | None:
    """Front matter, then a Date label, then the earliest Changelog date, then a dated file name."""
    for raw in (front.get("date"), meta.get("date"), meta.get("proposed_at")):
        d = _norm_date(raw)
        if d:
            return d
    for idx, h in enumerate(blocks):
        if heading_key(h.text) in ("changelog", "change log", "release history"):
            end = blocks[idx + 1].line if idx + 1 < len(blocks) else len(lines)
            dates = [d for line in lines[h.end : end] if (d := _norm_date(line))]
            if dates:
                return min(dates)
    m = re.match(r"^(\d{4}-\d{2}-\d{2})", posixpath.basename(path))
    if m:
        return m.group(1)
    return None


# --------------------------------------------------------------------------------------------------
# Extra metadata


def extra_fields(front: Mapping[str, Any], meta: Mapping[str, str]) -> dict[str, str]:
    """Every other front matter key and head label, as strings (for display and the index)."""
    out: dict[str, str] = {}
    for k, v in front.items():
        if k in ("title", "id", "status", "date") or k in FRONT_MATTER_RELATIONS:
            continue
        if isinstance(v, str | int | float | bool) or (
            isinstance(v, list) and all(isinstance(x, str) for x in v)
        ):
            s = str_value(v)
            if s:
                out[k] = s
        elif v is not None:
            out[k] = str_value(yaml.safe_dump(v, allow_unicode=True, default_flow_style=True).strip()) or ""
    for k, v in meta.items():
        if k.startswith("x:"):
            out.setdefault(k[2:], clean_inline(v)[:300])
        elif k not in ("status", "date"):
            out.setdefault(k, clean_inline(v)[:300])
    return out
