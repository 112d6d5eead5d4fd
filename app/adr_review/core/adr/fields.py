"""The fields of an ADR beside its prose: title and id, the metadata lines and tables of the document
head, status, date and the extra key/values.

Every pattern here runs on one line or one short value, capped (MAX_LINE) before matching, and none
has a lazy group followed by an unbounded run it must backtrack over: a 1 MB `Status:` line padded
with spaces costs one pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from adr_review.core.adr.markdown import MarkdownDoc, plain_text
from adr_review.core.adr.model import Heading, Status
from adr_review.core.adr.names import date_from_filename, format_id
from adr_review.core.adr.sections import heading_key, heading_section
from adr_review.core.adr.vocabulary import FRONT_MATTER_RELATIONS, META_HEADINGS, META_LABELS, STATUS_WORDS

MAX_LINE = 2_000
MAX_TITLE = 500


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

_TITLE_ID = re.compile(
    r"^\s*(?:\[)?M?ADR[\s_-]*(\d{8}-\d{1,3}|\d+)\]?\s*(?:[:：.\-–—|]\s*|\s+)(.*)$", re.IGNORECASE
)
_NUM_TITLE = re.compile(r"^\s*(\d{1,5})\s*[.:：)]\s+(.+)$")
_BARE_NUM_TITLE = re.compile(r"^(\d{1,5})\s+(\S.*)$")
_ADR_LINE = re.compile(r"^\s*ADR[-\s]?(\d{8}-\d{1,3}|\d+)\s*[:：]\s*\S")


def find_title(lines: list[str], headings: list[Heading]) -> tuple[str | None, int | None]:
    """(title text, its line index): the first H1 that is not a section, else the seeds' "ADR-N:" line,
    else a single top heading at another level."""
    for h in headings:
        if not h.markdown or h.level != 1:
            continue
        if heading_key(h.text) in META_HEADINGS or heading_section(h.text)[0] is not None:
            continue
        return h.text[:MAX_TITLE], h.line
    # Plain text (the seeds): the "ADR-0071: ..." line, wherever chrome put it.
    for i, line in enumerate(lines[:80]):
        if _ADR_LINE.match(line[:MAX_LINE]):
            return line.strip()[:MAX_TITLE], i
    # A single top heading at another level (some docs start at ##).
    md = [h for h in headings if h.markdown]
    if md:
        top = min(h.level for h in md)
        first = md[0]
        if (
            first.level == top
            and heading_section(first.text)[0] is None
            and heading_key(first.text) not in META_HEADINGS
            and sum(h.level == top for h in md) == 1
        ):
            return first.text[:MAX_TITLE], first.line
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
    m = _BARE_NUM_TITLE.match(title)
    if m and file_number is not None and int(m.group(1)) == file_number:
        return format_id(m.group(1)), m.group(2).strip()
    return None, title


# --------------------------------------------------------------------------------------------------
# Metadata lines: "* Status: accepted", "• Status: Accepted", "- **ステータス**: 決定済み",
# "Date: 05/02/2018", "|Status  |Implemented|"

META_LINE = re.compile(
    r"^\s*(?:[-*+•●・]\s*)?(?:\*\*|__)?([A-Za-z][A-Za-z ]{1,30}?|[^\x00-\x7f:：|]{1,12}?)"
    r"(?:\s*[(（][^)）]*[)）])?(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?(.*)$"
)
_SPACE_RUNS = re.compile(r"[ \t]{2,}")
_TABLE_ROW = re.compile(r"^\s*\|\s*\**([^|*]+)\**\s*\|(.*)\|\s*$")


def meta_line(line: str) -> tuple[str, str] | None:
    """(label, value) of a "Label: value" line or a two-cell table row; None otherwise."""
    line = _SPACE_RUNS.sub(" ", line)[:MAX_LINE]
    m = _TABLE_ROW.match(line) or META_LINE.match(line)
    if not m:
        return None
    value = m.group(2).strip().strip("*_").strip()
    return (m.group(1).strip(), value) if value else None


def collect_metadata(lines: list[str], headings: list[Heading], *, start: int = 0) -> dict[str, str]:
    """First occurrence of each known label in the document head (before the first section)."""
    first_section = next(
        (h.line for h in headings if h.line >= start and heading_section(h.text)[0] is not None),
        min(len(lines), start + 120),
    )
    meta: dict[str, str] = {}
    others: dict[str, str] = {}
    for line in lines[start:first_section]:
        found = meta_line(line)
        if not found:
            continue
        label_raw, value = found
        if set(value) <= set("-: "):
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

_TEMPLATE_STATUS = re.compile(r"\{[^{}]*\|[^{}]*\}|^\s*\[?\s*\w+\s*\|\s*\w+\s*\|")
_NEGATED = re.compile(r"(?:\bnot|\bnever|n't)\s+(?:yet\s+)?$")
_STATUS_PATTERNS: tuple[tuple[re.Pattern[str] | str, int, Status], ...] = tuple(
    (
        re.compile(rf"(?<![a-z]){re.escape(w)}(?![a-z])") if w.isascii() else w,
        len(w),
        status,
    )
    for w, status in ((word.casefold().replace("-", " "), st) for word, st in STATUS_WORDS.items())
)


def normalize_status(raw: str) -> Status:
    """Earliest status keyword in the raw text (the longer one at a tie: "承認待ち" over "承認");
    'unknown' when none or an unfilled template. "not accepted", "未承認" are not accepted."""
    raw = raw[:600]
    if _TEMPLATE_STATUS.search(raw):
        return "unknown"
    s = re.sub(r"\s+", " ", plain_text(raw).casefold().replace("-", " "))
    best: tuple[int, int, Status] | None = None
    for pattern, length, status in _STATUS_PATTERNS:
        if isinstance(pattern, str):
            pos = s.find(pattern)
        else:
            m = pattern.search(s)
            pos = m.start() if m else -1
        if pos < 0:
            continue
        if status == "accepted" and (
            _NEGATED.search(s[max(0, pos - 20) : pos]) or s[pos - 1 : pos] in ("未", "不")
        ):
            continue
        cand = (pos, -length, status)
        if best is None or cand < best:
            best = cand
    return best[2] if best else "unknown"


def find_status(
    front: Mapping[str, Any],
    meta: Mapping[str, str],
    doc: MarkdownDoc,
    headings: list[Heading],
    n_lines: int,
    badge: str | None = None,
    logged: tuple[str, str, Status] | None = None,
) -> tuple[str, Status, str | None]:
    """(raw status as written, normalised status, a note for the reader or None) from front matter,
    metadata, a Status section or a status badge (app/adr_review/core/adr/badges.py); `logged` is the
    Changelog's latest decision (date, entry, status: app/adr_review/core/adr/changelog.py), which
    stands over a body status still at proposed, or none, but not over typed front matter."""
    candidates: list[str] = []
    section_status = _status_section_text(doc, headings, n_lines)
    if "status" in meta:
        candidates.append(meta["status"])
    if section_status:
        candidates.append(section_status)
    if badge:
        candidates.append(badge)
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
    note = None
    if logged and fm_norm == "unknown" and status in ("proposed", "unknown"):
        date, entry, decided = logged
        if status == "proposed":
            note = (
                f"the Status says {plain_text(raw, 60)!r} but the Changelog records {entry[:60]!r} on "
                f"{date}: {decided} is used"
            )
        raw, status = entry, decided
    if fm_norm != "unknown" and status != fm_norm:
        raw, status = fm_status or "", fm_norm
    return plain_text(raw, 600)[:300], status, note


_TASK = re.compile(r"^\[([ xX])\]\s+")


def _status_section_text(doc: MarkdownDoc, headings: list[Heading], n_lines: int) -> str | None:
    for idx, h in enumerate(headings):
        if heading_key(h.text) not in ("status", "ステータス", "状態"):
            continue
        end = headings[idx + 1].line if idx + 1 < len(headings) else n_lines
        blocks = doc.between(h.end, end)
        # A task list of every status with one ticked ("- [ ] 提案中 / - [x] 承認"): the ticked one.
        tasks = [m for b in blocks if b.item and (m := _TASK.match(b.text))]
        if tasks:
            ticked = [m.string[m.end() :].strip() for m in tasks if m.group(1) != " "]
            return " ".join(ticked) if ticked else None
        for block in blocks:
            if block.kind not in ("paragraph", "html"):
                continue
            text = block.text.strip()
            if block.quoted and len(text) > 60:
                continue  # template guidance quoted under the heading
            if text:
                return text.split("\n")[0] if len(text) > 300 else text.replace("\n", " ")
    return None


# --------------------------------------------------------------------------------------------------
# Date

_ISO_DATE = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
_JA_DATE = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日")
_DMY_DATE = re.compile(r"\b(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})\b")


def norm_date(raw: Any) -> str | None:
    if raw is None:
        return None
    s = str(raw).strip()[:MAX_LINE]
    m = _ISO_DATE.search(s) or _JA_DATE.search(s)
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
    front: Mapping[str, Any], meta: Mapping[str, str], changelog_dates: Sequence[str], path: str
) -> str | None:
    """Front matter, then a Date label, then the earliest Changelog date, then a dated file name."""
    for raw in (front.get("date"), meta.get("date"), meta.get("proposed_at")):
        d = norm_date(raw)
        if d:
            return d
    return min(changelog_dates) if changelog_dates else date_from_filename(path)


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
            import yaml  # a nested front matter value, only

            out[k] = str_value(yaml.safe_dump(v, allow_unicode=True, default_flow_style=True).strip()) or ""
    for k, v in meta.items():
        if k.startswith("x:"):
            out.setdefault(k[2:], plain_text(v)[:300])
        elif k not in ("status", "date"):
            out.setdefault(k, plain_text(v)[:300])
    return out
