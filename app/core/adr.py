"""ADR markdown (or the seeds' plain text) -> Adr. Pure: takes bytes, returns a frozen value or raises
AdrParseError.

Formats seen in the wild and handled here: MADR (`* Status:` bullets, Considered Options, Decision
Outcome), Nygard / Tendermint (`## Status`, `## Context`, `## Changelog`), YAML front matter with typed
relations (karasu: `supersedes`, `superseded_by`, `related_to`, `depends_on`, `refines`), NATS metadata
tables (`|Status|Implemented|`), and plain-text exports (bare heading lines such as "コンテキスト",
"§1.1 背景", `• Status:` bullets, web-page chrome before the `ADR-0116: ...` title line).

The heading and status vocabularies are data tables at the top so a new team's dialect is one line.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from app.core.text import is_japanese

LinkKind = Literal["supersedes", "superseded_by", "related"]
Status = Literal["proposed", "accepted", "deprecated", "superseded", "rejected", "unknown"]
Language = Literal["en", "ja"]

# Canonical section names.
SECTIONS = ("context", "decision", "alternatives", "consequences", "risks", "rollback", "confirmation")

# --------------------------------------------------------------------------------------------------
# Vocabulary tables. Keys are compared after _heading_key(): NFKC-ish lowercasing, numbering ("1.", "§1.1"),
# a trailing "(English gloss)" / "（注記）", emphasis and a trailing colon removed.

# Primary headings: the section itself.
SECTION_HEADINGS: Mapping[str, str] = {
    # context
    "context": "context",
    "context and problem statement": "context",
    "context and problem": "context",
    "context and motivation": "context",
    "problem statement": "context",
    "problem": "context",
    "background": "context",
    "background and context": "context",
    "context and background": "context",
    "コンテキスト": "context",
    "背景": "context",
    "背景と課題": "context",
    "課題": "context",
    "問題": "context",
    "経緯": "context",
    # decision
    "decision": "decision",
    "decision outcome": "decision",
    "decisions": "decision",
    "the decision": "decision",
    "決定": "decision",
    "決定事項": "decision",
    "決定内容": "decision",
    "結論": "decision",
    # alternatives
    "considered options": "alternatives",
    "options considered": "alternatives",
    "alternatives": "alternatives",
    "alternatives considered": "alternatives",
    "alternative approaches": "alternatives",
    "alternative approach": "alternatives",
    "alternative solutions": "alternatives",
    "other options": "alternatives",
    "options": "alternatives",
    "pros and cons of the options": "alternatives",
    "rejected alternatives": "alternatives",
    "検討した代替案": "alternatives",
    "代替案": "alternatives",
    "検討した選択肢": "alternatives",
    "選択肢": "alternatives",
    "却下した案": "alternatives",
    "却下案": "alternatives",
    "却下した代替": "alternatives",
    "却下した代替案": "alternatives",
    "却下した選択肢": "alternatives",
    "検討した代替": "alternatives",
    "検討した候補": "alternatives",
    "採用しなかった案と理由": "alternatives",
    "alternative designs": "alternatives",
    "比較": "alternatives",
    # consequences
    "consequences": "consequences",
    "consequence": "consequences",
    "implications": "consequences",
    "impact": "consequences",
    "positive consequences": "consequences",
    "negative consequences": "consequences",
    "影響": "consequences",
    "結果": "consequences",
    "影響範囲": "consequences",
    "実装への影響": "consequences",
    "影響と結果": "consequences",
    # risks
    "risks": "risks",
    "risk": "risks",
    "risks and mitigations": "risks",
    "known limitations": "risks",
    "リスク": "risks",
    "リスクと対策": "risks",
    "リスク分析の結論": "risks",
    "残課題": "risks",
    "トレードオフと既知の制約": "risks",
    # rollback
    "rollback": "rollback",
    "rollback plan": "rollback",
    "exit criteria": "rollback",
    "re-evaluation triggers": "rollback",
    "撤退条件": "rollback",
    "再評価の条件": "rollback",
    "再評価トリガ": "rollback",
    "再検討トリガー": "rollback",
    "撤退基準": "rollback",
    "ロールバック": "rollback",
    "ロールバック計画": "rollback",
    # confirmation
    "confirmation": "confirmation",
    "validation": "confirmation",
    "verification": "confirmation",
    "検証": "confirmation",
    "確認方法": "confirmation",
}

# Fallback headings: used for a section only when the document has no primary heading for it
# (Cosmos puts an Abstract before its Context; some NATS ADRs only have Motivation / Design).
FALLBACK_HEADINGS: Mapping[str, str] = {
    "abstract": "context",
    "motivation": "context",
    "summary": "context",
    "overview": "context",
    "introduction": "context",
    "purpose": "context",
    "概要": "context",
    "目的": "context",
    "proposal": "decision",
    "what's proposed": "decision",
    "what’s proposed": "decision",
    "proposed solution": "decision",
    "solution": "decision",
    "design": "decision",
    "detailed design": "decision",
    "specification": "decision",
    "implementation": "decision",
    "理由": "decision",
    "現時点の方針": "decision",
    "方針": "decision",
    "outcome": "decision",
    "proposed implementation": "decision",
    "basic design": "decision",
    "pros and cons": "alternatives",
    "security implications and review": "risks",
    "limitations": "risks",
}

# Headings that hold metadata, not prose; never a title.
META_HEADINGS = frozenset({"status", "ステータス", "changelog", "change log", "metadata", "状態"})

# Status vocabulary: the earliest keyword in the raw status wins ("PROPOSED Implemented" -> proposed,
# "Superseded (as never implemented) by ADR 32" -> superseded). Longer keywords are tried first at a
# position so "not_adopted" beats "adopted".
STATUS_WORDS: Mapping[str, Status] = {
    "superseded": "superseded",
    "supersede": "superseded",
    "replaced by": "superseded",
    "置換": "superseded",
    "置き換え": "superseded",
    "上書き": "superseded",
    "deprecated": "deprecated",
    "obsolete": "deprecated",
    "reverted": "deprecated",
    "retired": "deprecated",
    "廃止": "deprecated",
    "非推奨": "deprecated",
    "rejected": "rejected",
    "declined": "rejected",
    "abandoned": "rejected",
    "withdrawn": "rejected",
    "not adopted": "rejected",
    "not_adopted": "rejected",
    "cancelled": "rejected",
    "canceled": "rejected",
    "却下": "rejected",
    "不採用": "rejected",
    "取り下げ": "rejected",
    "見送り": "rejected",
    "accepted": "accepted",
    "approved": "accepted",
    "implemented": "accepted",
    "adopted": "accepted",
    "done": "accepted",
    "final": "accepted",
    "active": "accepted",
    "決定済み": "accepted",
    "決定": "accepted",
    "承認済み": "accepted",
    "承認": "accepted",
    "採用": "accepted",
    "採択": "accepted",
    "受理": "accepted",
    "実装済み": "accepted",
    "proposed": "proposed",
    "proposal": "proposed",
    "draft": "proposed",
    "in review": "proposed",
    "in progress": "proposed",
    "pending": "proposed",
    "open": "proposed",
    "incomplete": "proposed",
    "wip": "proposed",
    "提案": "proposed",
    "起案": "proposed",
    "検討中": "proposed",
    "レビュー中": "proposed",
    "草案": "proposed",
    "下書き": "proposed",
}

# Metadata labels (bullets, tables, plain "Key: value" lines, front matter) -> field.
META_LABELS: Mapping[str, str] = {
    "status": "status",
    "ステータス": "status",
    "状態": "status",
    "date": "date",
    "日付": "date",
    "決定日": "date",
    "承認日時": "date",
    "承認日": "date",
    "起案日時": "proposed_at",
    "起案日": "proposed_at",
    "created": "date",
    "last updated": "updated",
    "関連": "related",
    "related": "related",
    "related adrs": "related",
    "supersedes": "supersedes",
    "superseded by": "superseded_by",
    "置換": "supersedes",
    "置換された": "superseded_by",
}

# Front matter keys holding typed relations.
FRONT_MATTER_RELATIONS: Mapping[str, LinkKind] = {
    "supersedes": "supersedes",
    "replaces": "supersedes",
    "superseded_by": "superseded_by",
    "superseded-by": "superseded_by",
    "replaced_by": "superseded_by",
    "related_to": "related",
    "related": "related",
    "depends_on": "related",
    "refines": "related",
    "amends": "related",
    "see_also": "related",
}

SUMMARY_MAX = 600
# Bounds that keep a hostile 1 MB file linear: relation phrases are read in the first part of a line,
# summary paragraphs are cut before markdown clean-up, and one ADR yields at most this many links.
MAX_LINE_FOR_LINKS = 2_000
MAX_PARAGRAPH_FOR_SUMMARY = 4_000
MAX_LINKS = 200
LANGUAGE_SAMPLE = 4_000

# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# Entry point


def parse_adr(path: str, data: bytes, *, max_bytes: int = 1_000_000) -> Adr:
    """Parse one ADR file. `path` is relative to the ADR folder ('/' separated)."""
    path = path.replace("\\", "/")
    text = decode_adr_bytes(path, data, max_bytes=max_bytes)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise AdrParseError(path, "empty file (only whitespace)")

    front, body = _split_front_matter(text)
    lines = body.split("\n")
    blocks = _scan_headings(lines)
    if not any(h.markdown for h in blocks):
        blocks = _scan_plain_headings(lines)

    fm_title = _str(front.get("title"))

    # Title and id.
    title_raw, title_line = _find_title(lines, blocks)
    # A plain-text export may carry web-page chrome above its title line: metadata starts at the title.
    plain = not any(h.markdown for h in blocks)
    meta = _collect_metadata(lines, blocks, start=title_line if plain and title_line is not None else 0)
    if title_raw is None and fm_title:
        title_raw = fm_title
    file_id, number = _id_from_filename(path)
    title_id, title = _split_title_id(title_raw, number) if title_raw else (None, None)
    fm_id = _str(front.get("id"))
    # Precedence: front matter id > a file name that spells "adr-NNN" (what links point at; Tendermint's
    # adr-021 is titled "ADR 012") > an id in the title > a bare file number ("002_<hash>.txt" is not one).
    explicit_file_id = (
        file_id if re.match(r"^m?adr[-_ ]?\d", posixpath.basename(path), re.IGNORECASE) else None
    )
    adr_id = _format_id(fm_id) or explicit_file_id or title_id or file_id
    if adr_id is None:
        adr_id = posixpath.splitext(posixpath.basename(path))[0]
    id_number = _number_of(adr_id)
    if id_number is not None:
        number = id_number
    if not title:
        title = _split_title_id(fm_title)[1] if fm_title else None
    if not title:
        title = _title_from_filename(path)

    # Sections.
    sections = _extract_sections(lines, blocks, skip_line=title_line)

    # Status.
    raw_status, status = _find_status(front, meta, lines, blocks)

    # Date.
    date = _find_date(front, meta, lines, blocks, path)

    summary = _make_summary(sections, lines, blocks, title_line) or title
    language = _language(body)
    links = _find_links(path, adr_id, front, [raw_status, meta.get("status", "")], meta, body)

    extra = _extra(front, meta)
    return Adr(
        path=path,
        adr_id=adr_id,
        title=title,
        status=status,
        raw_status=raw_status,
        date=date,
        sections=sections,
        summary=summary,
        language=language,
        links=links,
        text=text,
        content_hash=hashlib.sha256(data).hexdigest(),
        number=number,
        extra=extra,
    )


def _language(body: str) -> Language:
    # A sample is plenty for a language guess; a document without any kana/kanji is English outright.
    if not _KANA_KANJI.search(body):
        return "en"
    return "ja" if is_japanese(_strip_code(body)[:LANGUAGE_SAMPLE]) else "en"


_KANA_KANJI = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")

# --------------------------------------------------------------------------------------------------
# Bytes -> str


_CONTROL_CHARS = re.compile(r"[\x01-\x08\x0e-\x1f]")


def decode_adr_bytes(path: str, data: bytes, *, max_bytes: int = 1_000_000) -> str:
    """Decode with a reason a human can act on; UTF-8 (with or without BOM) and UTF-16 with BOM."""
    if len(data) > max_bytes:
        raise AdrParseError(path, f"file too large ({len(data)} bytes > limit {max_bytes})")
    if not data.strip():
        raise AdrParseError(path, "empty file" if not data else "empty file (only whitespace)")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not data.startswith(
        codecs.BOM_UTF32_LE
    ):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise AdrParseError(path, f"invalid UTF-16 ({exc.reason} at offset {exc.start})") from None
    else:
        nul = data.find(b"\x00")
        if nul >= 0:
            raise AdrParseError(path, f"binary file (NUL byte at offset {nul})")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            offset = exc.start + (3 if data.startswith(codecs.BOM_UTF8) else 0)
            raise AdrParseError(
                path, f"not UTF-8 (byte 0x{data[offset]:02x} at offset {offset}); re-save the file as UTF-8"
            ) from None
    text = text.lstrip("\ufeff")
    if "\x00" in text:
        raise AdrParseError(path, f"binary file (NUL character at offset {text.index(chr(0))})")
    controls = len(_CONTROL_CHARS.findall(text, 0, 4096))
    if controls > 8:
        raise AdrParseError(path, f"binary file ({controls} control characters in the first 4 KiB)")
    return text


# --------------------------------------------------------------------------------------------------
# Front matter

_YamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONT = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
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


def _str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list | tuple):
        value = ", ".join(str(v) for v in value)
    s = str(value).strip()
    return s or None


# --------------------------------------------------------------------------------------------------
# Headings


@dataclass(frozen=True)
class _Heading:
    line: int  # index of the heading line (for setext: the text line)
    end: int  # first line after the heading markup
    level: int
    text: str
    markdown: bool


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _scan_headings(lines: list[str]) -> list[_Heading]:
    out: list[_Heading] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        fm = _FENCE.match(line)
        if fm:
            mark = fm.group(1)
            if fence is None:
                fence = mark[0] * 3
            elif mark.startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        m = _ATX.match(line)
        if m and (m.group(2) or "").strip():
            out.append(_Heading(i, i + 1, len(m.group(1)), m.group(2).strip(), True))
            continue
        if (
            i > 0
            and re.match(r"^ {0,3}(=+|-{2,})\s*$", line)
            and lines[i - 1].strip()
            and not _ATX.match(lines[i - 1])
            and not re.match(r"^\s*([-*+•|>]|\d+\.)", lines[i - 1])
            and (i < 2 or not lines[i - 2].strip())
        ):
            level = 1 if line.strip().startswith("=") else 2
            out.append(_Heading(i - 1, i + 1, level, lines[i - 1].strip(), True))
    return out


_NUMBERING = re.compile(r"^(?:§\s*)?(?:\d+(?:\.\d+)*\.?|[ivx]+\.|[a-z]\))\s+", re.IGNORECASE)
_GLOSS = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")


@functools.lru_cache(maxsize=4096)
def _heading_key(text: str) -> str:
    s = re.sub(r"<!--.*?-->", "", text)
    s = re.sub(r"[*_`]", "", s).strip()
    s = s.replace("：", ":").rstrip(":").strip()
    s = s.lstrip("§").strip()
    s = _NUMBERING.sub("", s)
    prev = None
    while prev != s:
        prev = s
        s = _GLOSS.sub("", s).strip()
    s = re.sub(r"^\[?(optional|オプション)\]?\s*", "", s, flags=re.IGNORECASE)
    s = re.sub(r"\s*\[optional\]$", "", s, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", s).casefold().strip(" .:-")


@functools.lru_cache(maxsize=4096)
def _heading_section(text: str) -> tuple[str | None, bool]:
    """(canonical section, is_primary) for a heading text; "背景・課題" counts as its first part."""
    key = _heading_key(text)
    for k in (key, _COMPOUND.split(key, maxsplit=1)[0].strip()):
        if k in SECTION_HEADINGS:
            return SECTION_HEADINGS[k], True
        if k in FALLBACK_HEADINGS:
            return FALLBACK_HEADINGS[k], False
    return None, False


_COMPOUND = re.compile(r"[・/／&＆、,]|\s+and\s+|と(?=[^\x00-\x7f])")


_PLAIN_SECTION_NUMBER = re.compile(r"^(?:§\s*)?\d+\.\d+")
_BULLET = re.compile(r"^\s*(?:[-*+•●・◦▪]|\d+[.)])\s+")


def _scan_plain_headings(lines: list[str]) -> list[_Heading]:
    """Headings of a plain-text export: short lines standing alone between blank lines."""
    out: list[_Heading] = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or len(s) > 70:
            continue
        if i > 0 and lines[i - 1].strip():
            continue
        if i + 1 < len(lines) and lines[i + 1].strip():
            continue
        if _BULLET.match(line) and not _PLAIN_SECTION_NUMBER.match(s):
            continue
        if s[-1] in "。．.:：、,;；!?！？|" or "|" in s:
            continue
        section, _primary = _heading_section(s)
        if _PLAIN_SECTION_NUMBER.match(s) or s.startswith("§"):
            level = 2
        elif section is not None or _heading_key(s) in META_HEADINGS:
            level = 1
        elif re.search(r"[.。]", s) and not re.search(r"\s[(（][^)）]*[)）]$", s):
            continue  # a short sentence, not a heading
        else:
            level = 1  # "判断基準 (Decision Drivers)", "参照 (References)", "Amendment: ..."
        out.append(_Heading(i, i + 1, level, s, False))
    return out


# --------------------------------------------------------------------------------------------------
# Title and id

_TITLE_ID = re.compile(
    r"^\s*(?:\[)?M?ADR[\s_-]*(\d{8}-\d{1,3}|\d+)\]?\s*(?:[:：.\-–—|]\s*|\s+)(.*)$", re.IGNORECASE
)
_NUM_TITLE = re.compile(r"^\s*(\d{1,5})\s*[.:：)]\s+(.+)$")
_ADR_LINE = re.compile(r"^\s*ADR[-\s]?(\d{8}-\d{1,3}|\d+)\s*[:：]\s*\S")


def _find_title(lines: list[str], blocks: list[_Heading]) -> tuple[str | None, int | None]:
    for h in blocks:
        if not h.markdown or h.level != 1:
            continue
        key = _heading_key(h.text)
        if key in META_HEADINGS or _heading_section(h.text)[0] is not None:
            continue
        return _clean_inline(h.text), h.line
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
            and _heading_section(first.text)[0] is None
            and _heading_key(first.text) not in META_HEADINGS
            and sum(h.level == top for h in md) == 1
        ):
            return _clean_inline(first.text), first.line
    return None, None


def _split_title_id(title: str | None, file_number: int | None = None) -> tuple[str | None, str | None]:
    """ "ADR 004: Foo" -> ("ADR-0004", "Foo"); "2. Foo" too; "23 Logging" only when 23 is the file number."""
    if not title:
        return None, None
    title = title.strip()
    m = _TITLE_ID.match(title)
    if m and m.group(2).strip():
        return _format_id(m.group(1)), m.group(2).strip()
    m = _NUM_TITLE.match(title)
    if m:
        return _format_id(m.group(1)), m.group(2).strip()
    m = re.match(r"^(\d{1,5})\s+(\S.*)$", title)
    if m and file_number is not None and int(m.group(1)) == file_number:
        return _format_id(m.group(1)), m.group(2).strip()
    return None, title


@functools.lru_cache(maxsize=4096)
def _format_id(raw: str | None) -> str | None:
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


def _number_of(adr_id: str) -> int | None:
    m = re.match(r"^ADR-(\d+)$", adr_id)
    return int(m.group(1)) if m else None


_FILE_DATE_ID = re.compile(r"^(\d{8})-(\d{1,3})(?=[-_.]|$)")
_FILE_PREFIX = re.compile(r"^(?:\d{4}-\d{2}-\d{2}[_-])?(?:m?adr[-_ ]?)?(\d{1,5})(?=[-_. ]|$)", re.IGNORECASE)


def _id_from_filename(path: str) -> tuple[str | None, int | None]:
    stem = posixpath.splitext(posixpath.basename(path))[0]
    m = _FILE_DATE_ID.match(stem)
    if m:
        return f"ADR-{m.group(1)}-{m.group(2).zfill(2)}", None
    m = _FILE_PREFIX.match(stem)
    if m:
        n = int(m.group(1))
        return f"ADR-{n:04d}", n
    return None, None


def _title_from_filename(path: str) -> str:
    stem = posixpath.splitext(posixpath.basename(path))[0]
    stem = _FILE_DATE_ID.sub("", stem)
    stem = _FILE_PREFIX.sub("", stem)
    words = re.sub(r"[-_]+", " ", stem).strip()
    return (words[:1].upper() + words[1:]) if words else posixpath.basename(path)


# --------------------------------------------------------------------------------------------------
# Metadata lines: "* Status: accepted", "• Status: Accepted", "- **ステータス**: 決定済み",
# "Date: 05/02/2018", "|Status  |Implemented|"

_META_LINE = re.compile(
    r"^\s*(?:[-*+•●・]\s*)?(?:\*\*|__)?([A-Za-z][A-Za-z ]{1,30}?|[^\x00-\x7f:：|]{1,12}?)"
    r"(?:\s*[(（][^)）]*[)）])?(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*(.+?)\s*$"
)
_TABLE_ROW = re.compile(r"^\s*\|\s*\**([^|*]+?)\**\s*\|\s*(.*?)\s*\|\s*$")


def _collect_metadata(lines: list[str], blocks: list[_Heading], *, start: int = 0) -> dict[str, str]:
    """First occurrence of each known label in the document head (before the first section)."""
    first_section = next(
        (h.line for h in blocks if h.line >= start and _heading_section(h.text)[0] is not None),
        min(len(lines), start + 120),
    )
    meta: dict[str, str] = {}
    others: dict[str, str] = {}
    for line in lines[start:first_section]:
        m = _TABLE_ROW.match(line) or _META_LINE.match(line)
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
# Sections


def _extract_sections(lines: list[str], blocks: list[_Heading], *, skip_line: int | None) -> dict[str, str]:
    primary_present: set[str] = set()
    for h in blocks:
        sec, prim = _heading_section(h.text)
        if sec is not None and prim:
            primary_present.add(sec)
    found: dict[str, list[str]] = {}
    enclosing = _enclosing_sections(blocks)
    for idx, h in enumerate(blocks):
        if h.line == skip_line:
            continue
        section, primary = _heading_section(h.text)
        if section is None or (not primary and section in primary_present):
            continue
        # Nested inside a heading of the same section (seed "コンテキスト" > "1.1 背景"): already covered.
        if enclosing[idx] == section:
            continue
        end = len(lines)
        for j in range(idx + 1, len(blocks)):
            nxt = blocks[j]
            nsec, nprim = _heading_section(nxt.text)
            if nxt.level <= h.level:
                end = nxt.line
                break
            if nsec is not None and nsec != section and (nprim or nsec not in primary_present):
                end = nxt.line
                break
        body = "\n".join(lines[h.end : end]).strip("\n")
        if body.strip():
            found.setdefault(section, []).append(body.strip())
    return {name: "\n\n".join(found[name]) for name in SECTIONS if name in found}


def _enclosing_sections(blocks: list[_Heading]) -> list[str | None]:
    """For each heading, the section of its nearest ancestor heading that maps to one (one pass)."""
    out: list[str | None] = []
    stack: list[tuple[int, str | None]] = []  # (level, nearest canonical section at or above it)
    for h in blocks:
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        above = stack[-1][1] if stack else None
        out.append(above)
        stack.append((h.level, _heading_section(h.text)[0] or above))
    return out


# --------------------------------------------------------------------------------------------------
# Status


_TEMPLATE_STATUS = re.compile(r"\{[^}]*\|[^}]*\}|^\s*\[?\s*\w+\s*\|\s*\w+\s*\|")


def normalize_status(raw: str) -> Status:
    """Earliest status keyword in the raw text; 'unknown' when none or an unfilled template."""
    if _TEMPLATE_STATUS.search(raw):
        return "unknown"
    s = _clean_inline(raw).casefold().replace("-", " ")
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


def _find_status(
    front: Mapping[str, Any], meta: Mapping[str, str], lines: list[str], blocks: list[_Heading]
) -> tuple[str, Status]:
    candidates: list[str] = []
    section_status = _status_section_text(lines, blocks)
    if "status" in meta:
        candidates.append(meta["status"])
    if section_status:
        candidates.append(section_status)
    fm_status = _str(front.get("status"))
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
    return _clean_inline(raw[:600])[:300], status


def _status_section_text(lines: list[str], blocks: list[_Heading]) -> str | None:
    for idx, h in enumerate(blocks):
        if _heading_key(h.text) not in ("status", "ステータス", "状態"):
            continue
        end = blocks[idx + 1].line if idx + 1 < len(blocks) else len(lines)
        for para in _paragraphs(lines[h.end : end]):
            if para.startswith(">") and len(para) > 60:
                continue  # template guidance quoted under the heading
            text = re.sub(r"^>\s*", "", para).strip()
            text = re.sub(r"^[-*+]\s+", "", text)
            if text:
                return _clean_inline(text.split("\n")[0] if len(text) > 300 else text.replace("\n", " "))
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


def _find_date(
    front: Mapping[str, Any],
    meta: Mapping[str, str],
    lines: list[str],
    blocks: list[_Heading],
    path: str,
) -> str | None:
    for raw in (front.get("date"), meta.get("date"), meta.get("proposed_at")):
        d = _norm_date(raw)
        if d:
            return d
    for idx, h in enumerate(blocks):
        if _heading_key(h.text) in ("changelog", "change log", "release history"):
            end = blocks[idx + 1].line if idx + 1 < len(blocks) else len(lines)
            dates = [d for line in lines[h.end : end] if (d := _norm_date(line))]
            if dates:
                return min(dates)
    m = re.match(r"^(\d{4}-\d{2}-\d{2})", posixpath.basename(path))
    if m:
        return m.group(1)
    return None


# --------------------------------------------------------------------------------------------------
# Summary


_CODE_FENCE_BLOCK = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.DOTALL | re.MULTILINE)


def _strip_code(text: str) -> str:
    return _CODE_FENCE_BLOCK.sub("", text)


def _paragraphs(lines: Iterable[str]) -> list[str]:
    text = _strip_code("\n".join(lines))
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _clean_inline(text: str) -> str:
    s = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    s = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", s)  # images
    s = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", s)  # inline links
    s = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", s)  # reference links
    s = re.sub(r"\[\\?(#\d+)\]", r"\1", s)
    s = re.sub(r"<(https?://[^>]+)>", r"\1", s)
    s = re.sub(r"</?[a-zA-Z][^>]*>", "", s)  # html tags
    s = re.sub(r"(\*\*|__)(.+?)\1", r"\2", s)
    s = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", s)
    s = re.sub(r"(?<![\w])_(?!\s)(.+?)(?<!\s)_(?![\w])", r"\1", s)
    s = re.sub(r"`([^`]*)`", r"\1", s)
    s = s.replace("\\", "")
    return re.sub(r"[ \t]+", " ", s).strip()


def _summary_paragraph(para: str) -> str | None:
    """One paragraph as a plain sentence run: wrapped lines re-joined, list items separated."""
    lines = [ln for ln in para[:MAX_PARAGRAPH_FOR_SUMMARY].split("\n") if ln.strip()]
    if not lines or all(ln.lstrip().startswith("|") for ln in lines):
        return None  # nothing, or a table
    if _ATX.match(lines[0]):
        lines = lines[1:]
    joined = ""
    for raw in lines:
        is_item = bool(_BULLET.match(raw))
        piece = _BULLET.sub("", re.sub(r"^\s*>\s?", "", raw)).strip()
        if not piece:
            continue
        if not joined:
            joined = piece
        elif is_item:
            joined = _end_sentence(joined, "; ") + piece
        elif _ends_cjk(joined) or _starts_cjk(piece):
            joined += piece
        else:
            joined += " " + piece
    text = _clean_inline(joined)
    return text or None


def _end_sentence(text: str, latin_sep: str) -> str:
    """Separator before the next item: nothing after 。/:, 。 after CJK, latin_sep otherwise."""
    if re.search(r"[。．！？:：]$", text):
        return text if _ends_cjk(text) else text + " "
    if _ends_cjk(text):
        return text + "。"
    if re.search(r"[.;!?]$", text):
        return text + " "
    return text + latin_sep


def _ends_cjk(s: str) -> bool:
    return bool(s) and ord(s[-1]) > 0x2E80


def _starts_cjk(s: str) -> bool:
    return bool(s) and ord(s[0]) > 0x2E80


def _cap(text: str, limit: int = SUMMARY_MAX) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(
        (m.end() for m in re.finditer(r"[.!?](?=\s)|[。！？]", head)),
        default=-1,
    )
    if cut >= limit // 3:
        return head[:cut].strip()
    space = head.rfind(" ")
    if space >= limit // 2:
        return head[:space].rstrip(",;:") + "…"
    return head.rstrip() + "…"


def _make_summary(
    sections: Mapping[str, str], lines: list[str], blocks: list[_Heading], title_line: int | None
) -> str:
    for name in ("decision", "context"):
        text = sections.get(name)
        if text:
            s = _summary_from(text)
            if s:
                return s
    for name in SECTIONS:
        if sections.get(name):
            s = _summary_from(sections[name])
            if s:
                return s
    # No usable section: the first prose after the title, skipping metadata lines and Status/Changelog.
    start = (title_line + 1) if title_line is not None else 0
    skip: set[int] = set()
    for idx, h in enumerate(blocks):
        skip.add(h.line)
        if _heading_key(h.text) in META_HEADINGS:
            end = blocks[idx + 1].line if idx + 1 < len(blocks) else len(lines)
            skip.update(range(h.line, end))
    body_lines = [
        ln
        for i, ln in enumerate(lines)
        if i >= start and i not in skip and (not _META_LINE.match(ln) or len(ln) > 120)
    ]
    return _summary_from("\n".join(body_lines))


def _summary_from(text: str) -> str:
    pieces: list[str] = []
    total = 0
    for para in _paragraphs(text.split("\n")):
        if _ATX.match(para) and "\n" not in para:
            continue
        s = _summary_paragraph(para)
        if not s:
            continue
        pieces.append(s)
        total += len(s)
        if total >= 120:
            break
    joined = ""
    for p in pieces:
        joined = _end_sentence(joined, ". ") + p if joined else p
    return _cap(joined)


# --------------------------------------------------------------------------------------------------
# Links

_ADR_MENTION = re.compile(
    r"(?<![\w/-])(?:M?ADR)[\s_-]?(\d{8}-\d{1,3}|\d{1,5})(?![\w])(?!\.md)", re.IGNORECASE
)
_MD_LINK = re.compile(r"\[([^\[\]\n]{0,300})\]\(\s*<?([^()\[\]\s<>]{1,400})>?(?:\s+\"[^\"\n]{0,200}\")?\s*\)")
_REF_DEF = re.compile(r"^[ \t]*\[[^\[\]\n]{1,200}\]:[ \t]*<?([^\s<>]{1,400}?)>?(?:[ \t]+.*)?$", re.MULTILINE)
# Typed relation phrases: (pattern, kind, where the target sits relative to the phrase).
_TYPED_PHRASES: tuple[tuple[re.Pattern[str], LinkKind, Literal["after", "before"]], ...] = (
    (
        re.compile(r"本\s*ADR\s*を\s*(?:上書き|置換|置き換え|supersede)", re.IGNORECASE),
        "superseded_by",
        "before",
    ),
    (
        re.compile(r"により\s*(?:上書き|置換|置き換え)|で\s*supersede", re.IGNORECASE),
        "superseded_by",
        "before",
    ),
    (
        re.compile(
            r"superseded\s+(?:\([^)]*\)\s+)?(?:in\s+part\s+)?by|replaced\s+by|置換された|置き換えられた",
            re.IGNORECASE,
        ),
        "superseded_by",
        "after",
    ),
    (re.compile(r"\bsupersedes?\b(?!\s+by)|\breplaces\b", re.IGNORECASE), "supersedes", "after"),
    (re.compile(r"を\s*(?:置換|置き換え|上書き)", re.IGNORECASE), "supersedes", "before"),
)
_ANY_TYPED = re.compile("|".join(f"(?:{p.pattern})" for p, _k, _w in _TYPED_PHRASES), re.IGNORECASE)
_SEGMENT_STOP = re.compile(r"[。;；\n]|\.\s|\s[(（]|（|\b[A-Za-z][\w ]{0,20}:\s|[^\x00-\x7f\s]{1,8}[:：]")
_NEGATED = re.compile(r"\b(?:not|never|n't)\b[\w ]{0,16}$", re.IGNORECASE)
_LINK_MASK = re.compile(r"\[[^\[\]\n]{0,300}\]\([^()\s]{0,400}\)")


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
                    (mm.start(), t) for mm in _ADR_MENTION.finditer(segment) if (t := _format_id(mm.group(1)))
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
        fid = _format_id(m.group(1))
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


def _find_links(
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
        key = canonical_id_key(target) if _ID_KEY.match(target) else target
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
            s = _str(v)
            if not s:
                continue
            ids = _ids_in(s)
            if ids:
                for i in ids:
                    add(kind, i)
            elif re.search(r"\.(md|markdown)$", s):
                add(kind, s)

    for line in [*status_lines, *_strip_code(body).split("\n")]:
        if _ANY_TYPED.search(line):
            for kind, target in _typed_targets(path, line):
                add(kind, target)
    # Everything else mentioned, in reading order: "ADR-N" mentions and links to sibling files.
    body_nocode = _strip_code(body)
    mentions = [(m.start(), t) for m in _ADR_MENTION.finditer(body_nocode) if (t := _format_id(m.group(1)))]
    for m in _MD_LINK.finditer(body_nocode):
        mentions += [(m.start(), t) for t in _sibling_targets(path, m.group(0))]
    for m in _REF_DEF.finditer(body_nocode):
        mentions += [(m.start(), t) for t in _sibling_targets(path, m.group(0))]
    for _pos, target in sorted(mentions, key=lambda x: x[0]):
        if len(order) >= MAX_LINKS:
            break
        add("related", target)
    return _merge_file_and_id_links([(typed[k], targets[k]) for k in order])


_KIND_RANK: Mapping[str, int] = {"related": 0, "supersedes": 1, "superseded_by": 2}


def _merge_file_and_id_links(links: list[tuple[LinkKind, str]]) -> tuple[AdrLink, ...]:
    """ "[MADR 099](099-foo.md)" is one relation, not two: keep the file target, the stronger kind."""
    file_ids: dict[str, str] = {}
    for _kind, target in links:
        if target.endswith((".md", ".markdown")):
            fid = _id_from_filename(target)[0]
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


# --------------------------------------------------------------------------------------------------
# Extra metadata


def _extra(front: Mapping[str, Any], meta: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in front.items():
        if k in ("title", "id", "status", "date") or k in FRONT_MATTER_RELATIONS:
            continue
        if isinstance(v, str | int | float | bool) or (
            isinstance(v, list) and all(isinstance(x, str) for x in v)
        ):
            s = _str(v)
            if s:
                out[k] = s
        elif v is not None:
            out[k] = _str(yaml.safe_dump(v, allow_unicode=True, default_flow_style=True).strip()) or ""
    for k, v in meta.items():
        if k.startswith("x:"):
            out.setdefault(k[2:], _clean_inline(v)[:300])
        elif k not in ("status", "date"):
            out.setdefault(k, _clean_inline(v)[:300])
    return out
