"""Which files in an ADR folder are ADRs: a pure name rule shared by the disk loader, the remote
folder reader and the PR use case (so a README, licence, index page or template is never reviewed,
indexed or cited), and which name an ADR's id, date and title come from.

Layouts: flat files (`0012-use-kafka.md`), nested folders of them (`tendermint-core/adr-021-x.md`),
and one folder per ADR: `0012-use-kafka/index.md` (or `README.md`) is that folder's ADR, and a folder
that holds such an index page, or sits beside an ADR file of its own name (opentofu's
`rfc/20241206-oci-registries.md` and `rfc/20241206-oci-registries/1-oci-primer.md`), holds that ADR's
attachments, which are not ADRs (`select_adr_files`, which needs the whole listing).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

MARKDOWN_SUFFIXES = (".md", ".markdown")
_SURROGATE = re.compile("[\ud800-\udfff]")


def printable_path(rel: str) -> str:
    """A path as text every encoder takes: each byte of a file name that is not UTF-8 (the surrogate
    escape the OS hands over for it) written as `%XX`, so the name can be cached, indexed, put in a
    marker and shown (a backslash would read as a Windows separator); the file itself is still opened
    by its real name. Any other lone surrogate becomes U+FFFD."""
    if rel.isascii():
        return rel
    return _SURROGATE.sub(
        lambda m: f"%{ord(m[0]) - 0xDC00:02X}" if "\udc80" <= m[0] <= "\udcff" else "\ufffd", rel
    )


def is_markdown(path: str) -> bool:
    return path.casefold().endswith(MARKDOWN_SUFFIXES)


# Files that live in ADR folders but are not ADRs (compared case-insensitively on the name without
# its extension).
SKIP_STEMS = frozenset(
    {
        "readme",
        "index",
        "_index",
        "summary",
        "toc",
        "license",
        "licence",
        "copying",
        "notice",
        "changelog",
        "contributing",
        "code_of_conduct",
        "security",
        "authors",
        "_sidebar",
        "_navbar",
        "_footer",
    }
)
_INDEX_STEMS = frozenset({"index", "readme"})
_TEMPLATE = re.compile(r"(^|[-_.\s])template([-_.\s]|$)", re.IGNORECASE)
# A folder named like one ADR: a number or a date, then a slug ("0012-use-kafka", "20241206-oci-x").
_ADR_FOLDER = re.compile(r"^(?:m?adr[-_]?)?\d+(?:-\d{2}-\d{2})?[-_][^\W\d_]{2}", re.IGNORECASE)


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else name


def adr_folder(rel: str) -> str | None:
    """The ADR folder a file sits directly in ("0012-x/index.md" -> "0012-x"), if its parent is one."""
    parent = posixpath.basename(posixpath.dirname(rel))
    return parent if parent and _ADR_FOLDER.match(parent) else None


def adr_stem(rel: str) -> str:
    """The name an ADR's id, date and title come from: the file's, or its folder's for `<slug>/index.md`."""
    name = posixpath.basename(rel)
    stem = _stem(name)
    if stem.casefold() in _INDEX_STEMS:
        folder = adr_folder(rel)
        if folder:
            return folder
    return stem


def is_adr_candidate(rel: str) -> bool:
    """False for READMEs, licences, index pages, templates and anything under a hidden directory;
    True for `<slug>/index.md` in an ADR folder (the folder's name then counts, see adr_stem)."""
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts):
        return False
    stem = _stem(parts[-1]).casefold()
    if stem in _INDEX_STEMS and adr_folder(rel) is not None:
        return not _TEMPLATE.search(adr_stem(rel))
    if stem in SKIP_STEMS:
        return False
    return not _TEMPLATE.search(stem)


def select_adr_files(paths: Iterable[str]) -> list[str]:
    """The ADRs of a folder listing (paths relative to the ADR folder), in the order given: candidates,
    less the attachments of one-folder ADRs (see the module docstring)."""
    listed = list(paths)
    stems = {posixpath.join(posixpath.dirname(p), _stem(posixpath.basename(p))) for p in listed}
    owners = {
        posixpath.dirname(p) for p in listed if adr_folder(p) and adr_stem(p) != _stem(posixpath.basename(p))
    }
    out = []
    for rel in listed:
        if not is_adr_candidate(rel):
            continue
        folder = posixpath.dirname(rel)
        index_page = adr_folder(rel) is not None and adr_stem(rel) != _stem(posixpath.basename(rel))
        if not index_page and adr_folder(rel) and (folder in owners or folder in stems):
            continue  # an attachment of the ADR this folder belongs to
        out.append(rel)
    return out
