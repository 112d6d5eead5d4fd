"""The entry point: bytes -> decoded text -> blocks -> fields, sections, summary, links -> `Adr`."""

from __future__ import annotations

import codecs
import hashlib
import posixpath
import re

from app.core.adr.blocks import scan_headings, strip_code
from app.core.adr.fields import (
    collect_metadata,
    extra_fields,
    find_date,
    find_status,
    find_title,
    format_id,
    id_from_filename,
    number_of,
    split_front_matter,
    split_title_id,
    str_value,
    title_from_filename,
)
from app.core.adr.links import find_links
from app.core.adr.model import Adr, AdrParseError, Language
from app.core.adr.sections import extract_sections
from app.core.adr.summary import make_summary
from app.core.text import is_japanese

# A sample is plenty for a language guess.
LANGUAGE_SAMPLE = 4_000
_KANA_KANJI = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_CONTROL_CHARS = re.compile(r"[\x01-\x08\x0e-\x1f]")


def parse_adr(path: str, data: bytes, *, max_bytes: int = 1_000_000) -> Adr:
    """Parse one ADR file. `path` is relative to the ADR folder ('/' separated)."""
    path = path.replace("\\", "/")
    text = decode_adr_bytes(path, data, max_bytes=max_bytes)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise AdrParseError(path, "empty file (only whitespace)")

    front, body = split_front_matter(text)
    lines = body.split("\n")
    blocks = scan_headings(lines)

    fm_title = str_value(front.get("title"))

    # Title and id.
    title_raw, title_line = find_title(lines, blocks)
    # A plain-text export may carry web-page chrome above its title line: metadata starts at the title.
    plain = not any(h.markdown for h in blocks)
    meta = collect_metadata(lines, blocks, start=title_line if plain and title_line is not None else 0)
    if title_raw is None and fm_title:
        title_raw = fm_title
    file_id, number = id_from_filename(path)
    title_id, title = split_title_id(title_raw, number) if title_raw else (None, None)
    fm_id = str_value(front.get("id"))
    # Precedence: front matter id > a file name that spells "adr-NNN" (what links point at; Tendermint's
    # adr-021 is titled "ADR 012") > an id in the title > a bare file number ("002_<hash>.txt" is not one).
    explicit_file_id = (
        file_id if re.match(r"^m?adr[-_ ]?\d", posixpath.basename(path), re.IGNORECASE) else None
    )
    adr_id = format_id(fm_id) or explicit_file_id or title_id or file_id
    if adr_id is None:
        adr_id = posixpath.splitext(posixpath.basename(path))[0]
    id_number = number_of(adr_id)
    if id_number is not None:
        number = id_number
    if not title:
        title = split_title_id(fm_title)[1] if fm_title else None
    if not title:
        title = title_from_filename(path)

    sections = extract_sections(lines, blocks, skip_line=title_line)
    raw_status, status = find_status(front, meta, lines, blocks)
    date = find_date(front, meta, lines, blocks, path)
    summary = make_summary(sections, lines, blocks, title_line) or title
    language = _language(body)
    links = find_links(path, adr_id, front, [raw_status, meta.get("status", "")], meta, body)

    extra = extra_fields(front, meta)
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
    # A document without any kana/kanji is English outright.
    if not _KANA_KANJI.search(body):
        return "en"
    return "ja" if is_japanese(strip_code(body)[:LANGUAGE_SAMPLE]) else "en"


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
