"""Ids, numbers, dates and titles from file names, and the id forms: what links point at.

File names seen in the wild: `0012-foo.md` / `adr-012-foo.md` / `ADR-10.md` (a number),
`2021-06-05_001-foo.md` (a date, then a number), `20260316-01-foo.md` and `2024031501-foo.md` (a date
and that day's sequence: id `ADR-20260316-01`), `2025-01-15-foo.md` and `20201016-foo.md` (a date and
no number: the name is the id), `<slug>/index.md` (the folder's name counts, see
adr_review.core.adr_paths.adr_stem), and the seeds' `002_<hash>.txt` exports (the 002 is an export order,
not an ADR number).
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata

from adr_review.core.adr_paths import adr_stem
from adr_review.core.text import nfkc

ID_KEY = re.compile(r"^\s*adr[-_ ]?0*(\d+)((?:-\d+)*)\s*$", re.IGNORECASE)
_DATE = r"(\d{4})-?(\d{2})-?(\d{2})"
_FILE_DATE_ID = re.compile(r"^(\d{8})-(\d{1,3})(?=[-_.]|$)")
_FILE_DATE_NN = re.compile(r"^(\d{8})(\d{2})(?=[-_.]|$)")
_FILE_DATE = re.compile(rf"^{_DATE}(?=[-_.]|$)")
_FILE_DATED_NUMBER = re.compile(r"^\d{4}-\d{2}-\d{2}[_-](?:m?adr[-_ ]?)?(\d{1,5})(?=[-_. ]|$)", re.IGNORECASE)
_FILE_PREFIX = re.compile(r"^(?:m?adr[-_ ]?)?(\d{1,5})(?=[-_. ]|$)", re.IGNORECASE)
_EXPORT = re.compile(r"^\d{1,5}_[0-9a-f]{8,}$", re.IGNORECASE)
_DATE_PREFIX = re.compile(rf"^{_DATE}(?:\d{{2}})?(?:-\d{{1,3}})?[-_.]*")


# Every dash a reader takes for a hyphen: hyphen, non-breaking hyphen (U+2011), figure dash, en and em
# dashes, horizontal bar, minus sign, small and full-width hyphen-minus.
_DASHES = re.compile("[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]")


def fold_id(text: str) -> str:
    """Ids as a reader sees them, folded the one way every comparison, de-duplication and display of
    an id uses (and any text ids are looked for in): NFKC (`ＡＤＲ-０００４` is ADR-0004), invisible
    format characters dropped (`ADR-0\u2060001` is ADR-0001, as the renderer would show it), any
    dash a hyphen (`ADR–0777`), whitespace runs one space, trimmed."""
    if not text.isascii():
        text = nfkc(text)
        if not text.isascii():
            text = _DASHES.sub("-", "".join(ch for ch in text if unicodedata.category(ch) != "Cf"))
    return " ".join(text.split())


@functools.lru_cache(maxsize=65_536)
def canonical_id_key(adr_id: str) -> str:
    """Comparison key for ids, after fold_id: case and zero-padding do not matter ("adr-71" ==
    "ADR-0071" == "ＡＤＲ－７１")."""
    adr_id = fold_id(adr_id)
    m = ID_KEY.match(adr_id)
    if not m:
        return adr_id.casefold()
    tail = "".join("-" + _unpadded(p) for p in m.group(2).split("-") if p)
    return f"ADR-{_unpadded(m.group(1))}{tail}"


def _unpadded(digits: str) -> str:
    """The digits without leading zeros, never through int() past a length CPython refuses to print
    ("ADR-" and 5,000 digits is a key, not a ValueError); int() still reads other scripts' digits."""
    return str(int(digits)) if len(digits) <= 1_000 else digits.lstrip("0") or "0"


@functools.lru_cache(maxsize=4096)
def format_id(raw: str | None) -> str | None:
    """ "ADR 101" / "adr-0101" / "101" -> "ADR-0101"; date ids keep their shape ("ADR-20260320-01")."""
    if not raw:
        return None
    s = raw.strip()
    m = re.match(r"^(?:M?ADR)?[\s_-]*(\d{8})-(\d{1,3})$", s, re.IGNORECASE)
    if m:
        return f"ADR-{m.group(1)}-{m.group(2).zfill(2)}"
    m = re.match(r"^(?:M?ADR)?[\s_-]*(\d{1,9})$", s, re.IGNORECASE)
    if m:
        return f"ADR-{int(m.group(1)):04d}"
    return s


def number_of(adr_id: str) -> int | None:
    """The number of a numbered id ("ADR-0071" -> 71); None for date ids and numbers past 18 digits."""
    m = re.match(r"^ADR-(\d{1,18})$", adr_id)
    return int(m.group(1)) if m else None


def _valid_date(year: str, month: str, day: str) -> bool:
    return 1900 <= int(year) <= 2999 and 1 <= int(month) <= 12 and 1 <= int(day) <= 31


def id_from_filename(path: str) -> tuple[str | None, int | None]:
    """(id, number) from the file name: "0012-foo.md" -> ("ADR-0012", 12); date ids have no number;
    a date with no number, or an export's order number, gives no id."""
    stem = adr_stem(path)
    for pattern in (_FILE_DATE_ID, _FILE_DATE_NN):
        m = pattern.match(stem)
        if m and _valid_date(m.group(1)[:4], m.group(1)[4:6], m.group(1)[6:]):
            return f"ADR-{m.group(1)}-{m.group(2).zfill(2)}", None
    if _EXPORT.match(stem):
        return None, None
    m = _FILE_DATED_NUMBER.match(stem)
    if m:
        n = int(m.group(1))
        return f"ADR-{n:04d}", n
    m = _FILE_DATE.match(stem)
    if m and _valid_date(*m.groups()):
        return None, None  # "2025-01-15-foo", "20201016-foo": dated, not numbered
    m = _FILE_PREFIX.match(stem)
    if m:
        n = int(m.group(1))
        return f"ADR-{n:04d}", n
    return None, None


def date_from_filename(path: str) -> str | None:
    """ "2021-06-05_001-foo.md", "20260316-01-foo.md", "2024031501-foo.md" -> the date they start with."""
    m = _FILE_DATE.match(adr_stem(path)) or re.match(
        r"^(\d{4})(\d{2})(\d{2})\d{2}(?=[-_.]|$)", adr_stem(path)
    )
    if m and _valid_date(*m.groups()):
        return f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
    return None


def title_from_filename(path: str) -> str:
    stem = adr_stem(path)
    m = _DATE_PREFIX.match(stem)
    if m and _valid_date(*m.groups()[:3]):
        stem = stem[m.end() :]
    stem = _FILE_PREFIX.sub("", stem)
    words = re.sub(r"[-_]+", " ", stem).strip()
    return (words[:1].upper() + words[1:]) if words else posixpath.basename(path)


_PAGE_SLUG = re.compile(r"[a-z0-9]+(?:[-_/.][a-z0-9]+)*")
_SLUG_NUMBER = re.compile(r"(?<![a-z0-9])m?adr[-_ ]?(\d{1,5})(?!\d)")


def front_matter_id(raw: str | None) -> tuple[str | None, str | None]:
    """(id, number id of a page slug) from a front matter `id`. Docusaurus and similar sites use `id`
    for the page's slug (`adrs-adr014`), which is no ADR id: a lower-case slug that is not `adr-14` gives
    no id, only the number it names ("ADR-0014"), used when the file name and the title name none."""
    formatted = format_id(raw)
    if not formatted or ID_KEY.match(formatted) or not _PAGE_SLUG.fullmatch(formatted):
        return formatted, None
    m = _SLUG_NUMBER.search(formatted)
    return None, format_id(m.group(1)) if m else None
