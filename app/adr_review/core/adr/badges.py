"""Statuses stated by a badge image: `![Accepted](https://img.shields.io/badge/adr-accepted-green)` under
`## Status` (dxw's adr-tools template), `![Status](https://img.shields.io/badge/status-Accepted-brightgreen)`
or `<img alt="ADR status: accepted" src="https://img.shields.io/badge/ADR-accepted-2ea44f">` under the title.

A badge's text is in its URL (shields.io's `/badge/<label>-<message>-<color>` with `--` for a dash and
`_` for a space, `/static/v1?label=&message=`, badgen's `/badge/<label>/<message>/<color>`) and usually in
its alt text. Under a Status heading any image counts (its message, else its alt text). Elsewhere in the
document head only a badge that says it is a status does: its label (`status`, `adr`, ...) or its alt
text (`ADR status: accepted`, or the same status word as the message), so `![Date](.../date-2026--05--09)`
or a build badge is never read as a status. Badges inside HTML comments (the commented-out alternatives
of a template) and code blocks are not read. Every scan is capped: at most HEAD_LINES lines of a
section or of the head, MAX_SCAN characters in all, and each pattern's repeats are bounded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, unquote, urlsplit

from adr_review.core.adr.fields import normalize_status
from adr_review.core.adr.model import Heading
from adr_review.core.adr.sections import heading_key, heading_section
from adr_review.core.adr.vocabulary import META_LABELS

HEAD_LINES = 80
MAX_SCAN = 8_000
_STATUS_HEADINGS = frozenset({"status", "ステータス", "状態"})
_STATUS_LABELS = frozenset({"status", "adr", "adr status", "state", "decision", "decision status"})
_MD_IMAGE = re.compile(
    r"!\[([^\]\n]{0,300})\]\(\s*<?([^()\s<>]{1,2000})>?(?:\s+[\"'][^\"'\n]{0,300}[\"'])?\s*\)"
)
_HTML_IMAGE = re.compile(r"<img\b([^>]{0,500})>", re.IGNORECASE)
_ATTR = re.compile(r"""\b(alt|src)\s*=\s*(?:"([^"]{0,500})"|'([^']{0,500})')""", re.IGNORECASE)
_ALT_LABEL = re.compile(r"^\s*(?:adr\s+)?(?:status|state|ステータス|状態)\s*[:：]\s*(.+)$", re.IGNORECASE)
_BADGE_HOSTS = ("img.shields.io", "shields.io", "badgen.net", "flat.badgen.net")


def badge_status(
    lines: list[str], headings: list[Heading], code: set[int], title_line: int | None
) -> str | None:
    """The status text a badge states (as written: "Accepted"), or None."""
    for idx, h in enumerate(headings):
        if heading_key(h.text) in _STATUS_HEADINGS:
            end = min(headings[idx + 1].line if idx + 1 < len(headings) else len(lines), h.end + HEAD_LINES)
            found = _first(_images(_source(lines, h.end, end, code)), anywhere=True)
            if found:
                return found
    if title_line is None:  # no title: the head ends at the first section
        ends = [h.line for h in headings if heading_section(h.text)[0] is not None]
    else:  # below the title, up to the next heading
        ends = [h.line for h in headings if h.line > title_line]
    end = min([*ends, len(lines), HEAD_LINES])
    return _first(_images(_source(lines, 0, end, code)), anywhere=False)


def badge_text(url: str) -> tuple[str, str] | None:
    """(label, message) of a shields.io or badgen badge URL; None for any other image."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.hostname not in _BADGE_HOSTS:
        return None
    path = parts.path
    if path.startswith("/static/") or path == "/endpoint":
        query = parse_qs(parts.query)
        message = (query.get("message") or [""])[0]
        return ((query.get("label") or [""])[0], message) if message else None
    if not path.startswith("/badge/"):
        return None
    content = re.sub(r"\.(svg|png)$", "", path[len("/badge/") :])
    if parts.hostname.endswith("badgen.net"):
        pieces = [unquote(p) for p in content.split("/")]
        if len(pieces) == 2:
            return "", pieces[0]
        return (pieces[0], pieces[1]) if len(pieces) >= 3 else None
    pieces = content.replace("--", "\x00").replace("__", "\x01").split("-")
    pieces = [unquote(p.replace("_", " ").replace("\x00", "-").replace("\x01", "_")) for p in pieces]
    if len(pieces) == 2:  # message-color
        return "", pieces[0]
    if len(pieces) < 3:
        return None
    return pieces[0], "-".join(pieces[1:-1])


def _source(lines: list[str], start: int, end: int, code: set[int]) -> str:
    """The lines start..end-1 outside code blocks, at most MAX_SCAN characters, without HTML comments."""
    text = "\n".join(lines[i][:MAX_SCAN] for i in range(start, min(end, len(lines))) if i not in code)[
        :MAX_SCAN
    ]
    out: list[str] = []
    pos = 0
    while True:
        opening = text.find("<!--", pos)
        if opening < 0:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:opening])
        closing = text.find("-->", opening + 4)
        if closing < 0:
            return "".join(out)
        pos = closing + 3


def _images(source: str) -> Iterator[tuple[str, str]]:
    """(alt text, URL) of every Markdown and HTML image, in document order."""
    found: list[tuple[int, str, str]] = [
        (m.start(), m.group(1), m.group(2)) for m in _MD_IMAGE.finditer(source)
    ]
    for m in _HTML_IMAGE.finditer(source):
        attrs = {a.group(1).casefold(): a.group(2) or a.group(3) or "" for a in _ATTR.finditer(m.group(1))}
        if attrs.get("src"):
            found.append((m.start(), attrs.get("alt", ""), attrs["src"]))
    for _, alt, url in sorted(found, key=lambda f: f[0]):
        yield alt.strip(), url


def _first(images: Iterator[tuple[str, str]], *, anywhere: bool) -> str | None:
    for alt, url in images:
        badge = badge_text(url)
        label, message = badge if badge else ("", "")
        message = message.strip()
        if anywhere:
            for text in (message, _ALT_LABEL.sub(r"\1", alt)):
                if text and normalize_status(text) != "unknown":
                    return text[:300]
            continue
        if not badge or normalize_status(message) == "unknown":
            continue
        key = label.strip().casefold()
        labelled = key in _STATUS_LABELS or META_LABELS.get(key) == "status"
        alt_says = _ALT_LABEL.match(alt) is not None or normalize_status(alt) == normalize_status(message)
        if labelled or alt_says:
            return message[:300]
    return None
