"""The entry point: bytes -> decoded text -> front matter and Markdown blocks -> fields, sections,
summary, links -> `Adr`. Every step is linear in the input, and the Markdown reader works within a
budget (markdown.py): a pathological file is a per-file error or is read in part, never a hang."""

from __future__ import annotations

import codecs
import hashlib
import re

from adr_review.core.adr.badges import badge_status
from adr_review.core.adr.changelog import changelog_entries, logged_decision
from adr_review.core.adr.fields import (
    collect_metadata,
    extra_fields,
    find_date,
    find_status,
    find_title,
    split_title_id,
    str_value,
)
from adr_review.core.adr.front_matter import FrontMatterRefused, split_front_matter
from adr_review.core.adr.links import find_links
from adr_review.core.adr.markdown import MarkdownDoc, MarkdownTooComplex, read_markdown
from adr_review.core.adr.model import Adr, AdrParseError, Language
from adr_review.core.adr.names import (
    canonical_id_key,
    fold_id,
    front_matter_id,
    id_from_filename,
    number_of,
    title_from_filename,
)
from adr_review.core.adr.reader import is_markdown_path, plain_blocks
from adr_review.core.adr.sections import extract_sections, scan_plain_headings
from adr_review.core.adr.summary import make_summary
from adr_review.core.adr_paths import adr_stem
from adr_review.core.text import is_japanese

# A sample is plenty for a language guess.
LANGUAGE_SAMPLE = 4_000
_KANA_KANJI = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_CONTROL_CHARS = re.compile(r"[\x01-\x08\x0e-\x1f]")


def parse_adr(path: str, data: bytes, *, max_bytes: int = 1_000_000) -> Adr:
    """Parse one ADR file. `path` is relative to the ADR folder ('/' separated). Whatever the file
    holds, the outcome is an Adr or an AdrParseError for this file: a value no rule here bounds (a
    conversion CPython refuses) costs this file only, never the folder or the run."""
    path = path.replace("\\", "/")
    try:
        return _parse(path, data, max_bytes)
    except AdrParseError:
        raise
    except (ValueError, OverflowError, RecursionError) as exc:
        raise AdrParseError(path, f"a value in this file cannot be read ({type(exc).__name__})") from None


def _parse(path: str, data: bytes, max_bytes: int) -> Adr:
    text = decode_adr_bytes(path, data, max_bytes=max_bytes)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise AdrParseError(path, "empty file (only whitespace)")
    notes: list[str] = []
    try:
        front, body, lenient = split_front_matter(text)
    except FrontMatterRefused as exc:
        raise AdrParseError(path, str(exc)) from None
    if lenient:
        notes.append("the front matter is not valid YAML: read line by line as 'key: value'")
    try:
        doc = read_markdown(body)
    except MarkdownTooComplex as exc:
        raise AdrParseError(path, f"{exc}; split the file or simplify its Markdown") from None
    if doc.degraded:
        notes.append("very long or deeply nested inline Markdown: the end of the file was read as plain text")
    lines = body.split("\n")
    headings = list(doc.headings) or scan_plain_headings(lines)

    # Title and id.
    fm_title = str_value(front.get("title"))
    title_raw, title_line = find_title(lines, headings)
    # A plain-text export may carry web-page chrome above its title line: metadata starts at the title.
    plain = not any(h.markdown for h in headings)
    meta = collect_metadata(lines, headings, start=title_line if plain and title_line is not None else 0)
    # The front matter title is the page's title where the body has no H1 (Docusaurus renders it as one).
    if fm_title and not any(h.line == title_line and h.level == 1 and h.markdown for h in headings):
        title_raw, title_line = fm_title, None
    file_id, number = id_from_filename(path)
    title_id, title = split_title_id(title_raw, number) if title_raw else (None, None)
    front_id = fold_id(str_value(front.get("id")) or "") or None
    fm_id, slug_id = front_matter_id(front_id)  # Docusaurus' `id: adrs-adr014` is a page slug
    # Precedence: front matter id > the file name's number (what links point at; a copy-pasted "# 3."
    # title or Tendermint's adr-021 titled "ADR 012" must not take another ADR's id) > an id in the title.
    if not fm_id and file_id and title_id and canonical_id_key(file_id) != canonical_id_key(title_id):
        notes.append(f"the title says {title_id} but the file name says {file_id}: {file_id} is used")
    adr_id = fold_id(fm_id or file_id or title_id or slug_id or adr_stem(path))
    if front_id and fm_id is None:
        notes.append(f"the front matter id {front_id[:80]!r} is a page slug, not an ADR id: {adr_id} is used")
    id_number = number_of(adr_id)
    if id_number is not None:
        number = id_number
    if not title:
        title = split_title_id(fm_title)[1] if fm_title else None
    if not title:
        title = title_from_filename(path)

    markdown = is_markdown_path(path)
    sections, spans = extract_sections(lines, headings, skip_line=title_line)
    badge = badge_status(lines, headings, doc.code_lines(), title_line)
    changelog = changelog_entries(lines, headings)
    decision = logged_decision(changelog)
    logged = (decision.date, decision.text, decision.status) if decision else None
    raw_status, status, status_note = find_status(front, meta, doc, headings, len(lines), badge, logged)
    if status_note:
        notes.append(status_note)
    summary_blocks = doc.blocks if markdown else plain_blocks(body)
    summary = make_summary(spans, summary_blocks, headings, title_line, plain=not markdown) or title
    links = find_links(path, adr_id, front, [raw_status], doc.blocks)
    if status == "unknown" and any(lk.kind == "superseded_by" for lk in links):
        status = "superseded"  # no status stated, but "This RFC was later superseded by ..."
    return Adr(
        path=path,
        adr_id=adr_id,
        title=title,
        status=status,
        raw_status=raw_status,
        date=find_date(front, meta, [e.date for e in changelog], path),
        sections=sections,
        summary=summary,
        language=_language(doc, lines),
        links=links,
        text=text,
        content_hash=hashlib.sha256(data).hexdigest(),
        number=number,
        extra=extra_fields(front, meta),
        notes=tuple(notes),
    )


def _language(doc: MarkdownDoc, lines: list[str]) -> Language:
    """From the body outside code blocks; a document without any kana/kanji is English outright."""
    code = doc.code_lines()
    sample: list[str] = []
    size = 0
    for i, line in enumerate(lines):
        if i in code:
            continue
        sample.append(line)
        size += len(line) + 1
        if size >= LANGUAGE_SAMPLE:
            break
    text = "\n".join(sample)[:LANGUAGE_SAMPLE]
    if not _KANA_KANJI.search(text):
        return "en"
    return "ja" if is_japanese(text) else "en"


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
