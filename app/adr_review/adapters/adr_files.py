"""Read an ADR folder from disk: every ADR file parsed, bad ones reported, ids made unique; symlinks
that leave the folder are reported and not followed.

Id rule: inside one folder the first file (by sorted relative path) keeps its canonical id; a later
file whose id collides is shown under its file name, the stem a user can find and type
("095-mesh-scoped-zone-ingress", or the folder's name for `<slug>/index.md`; its path without the
extension if that is taken too), never an invented id, and says so in its notes. Real corpora need
this: Kuma reused numbers 095, 096, 100 and 103.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import os
import posixpath
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from adr_review.adapters.parse_pool import FileParser, SideWork
from adr_review.core.adr import Adr, AdrParseError, canonical_id_key, parse_adr
from adr_review.core.adr_paths import (
    adr_stem,
    is_adr_candidate,
    is_markdown,
    printable_path,
    select_adr_files,
)
from adr_review.core.serde import SerdeError

if TYPE_CHECKING:
    from adr_review.adapters.parse_cache import UnchangedFolder

DEFAULT_PATTERNS = ("**/*.md", "**/*.markdown")
MAX_BYTES = 1_000_000  # an ADR file larger than this is a per-file error, found by its size alone


def read_adr_file(path: Path, rel: str, *, max_bytes: int = MAX_BYTES) -> Adr:
    """One file; OS errors become AdrParseError so a run can report them like parse errors."""
    return parse_adr(rel, read_bounded(path, rel, max_bytes), max_bytes=max_bytes)


class FileTooLarge(ValueError):
    def __init__(self, path: Path, size: int, limit: int) -> None:
        self.reason = f"file too large ({size} bytes > limit {limit})"
        super().__init__(f"{path}: {self.reason}")


def bounded_bytes(path: Path, max_bytes: int = MAX_BYTES) -> bytes:
    """The file's bytes, its size checked before anything is read (an 8 GiB sparse file is one stat,
    not a MemoryError), and never more than max_bytes + 1 read (a file that grows after the check).
    OSError as reading it; FileTooLarge past max_bytes (a command names the file it was given)."""
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(max_bytes + 1) if size <= max_bytes else b""
    if size > max_bytes or len(data) > max_bytes:
        raise FileTooLarge(path, max(size, len(data)), max_bytes)
    return data


def read_bounded(path: Path, rel: str, max_bytes: int = MAX_BYTES) -> bytes:
    """`bounded_bytes` for a file of a folder: its errors are that file's AdrParseError."""
    try:
        return bounded_bytes(path, max_bytes)
    except OSError as exc:
        raise AdrParseError(rel, f"cannot read file ({exc.strerror or exc})") from None
    except FileTooLarge as exc:
        raise AdrParseError(rel, exc.reason) from None


def scan_adr_folder(
    root: Path, patterns: Iterable[str] = DEFAULT_PATTERNS
) -> tuple[list[tuple[Path, str]], list[AdrParseError]]:
    """The ADR files under root, sorted by relative path (adr_review.core.adr_paths decides which files are
    ADRs), and one error per symlink that leaves the folder: those are not followed, so a link to
    ~/.ssh or to another repository's file is never indexed, quoted or sent to a model. A folder or
    file the OS refuses to list or stat (a path past PATH_MAX, a folder without permission) is one
    error naming it; the rest of the folder is read. Symlinked folders are not descended into."""
    base = root.resolve()
    seen: dict[str, Path] = {}
    refused: dict[str, AdrParseError] = {}

    def refuse(p: Path, reason: str) -> None:
        rel = printable_path(p.relative_to(root).as_posix()) if p != root else "."
        refused.setdefault(rel, AdrParseError(rel, reason))

    def unlisted(exc: OSError) -> None:
        refuse(Path(exc.filename or root), f"cannot list this folder ({exc.strerror or exc}): not read")

    names = [pattern.removeprefix("**/") for pattern in patterns]
    top = os.fspath(root)
    for dirpath, dirnames, filenames in os.walk(root, onerror=unlisted):
        here = Path(dirpath)
        inner = dirpath[len(top) :].strip(os.sep).replace(os.sep, "/")  # os.walk joins onto `top`
        prefix = f"{inner}/" if inner else ""
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]  # nothing under them is an ADR
        for name in dirnames:
            p = here / name
            try:
                if p.is_symlink() and not _inside(p, base):
                    refuse(p, "symlink to a folder outside the ADR folder: not followed")
            except OSError as exc:
                refuse(p, f"cannot read this folder ({exc.strerror or exc}): not read")
        for name in filenames:
            if not any(fnmatch.fnmatchcase(name, pattern) for pattern in names):
                continue
            rel = printable_path(prefix + name)
            if not is_adr_candidate(rel):
                continue
            p = here / name
            try:
                # os.walk does not descend into symlinked folders, so every folder here lies inside
                # the root: only a file that is itself a link can lead out (no resolve per file)
                mode = os.lstat(p).st_mode
                if stat.S_ISLNK(mode) and not _inside(p, base):
                    refuse(p, "symlink to a file outside the ADR folder: not followed")
                elif stat.S_ISREG(mode) or (stat.S_ISLNK(mode) and p.is_file()):
                    seen[rel] = p
            except OSError as exc:
                refuse(p, f"cannot read file ({exc.strerror or exc})")
    files = [(seen[rel], rel) for rel in select_adr_files(sorted(seen))]
    return files, [refused[rel] for rel in sorted(refused)]


def list_adr_files(root: Path, patterns: Iterable[str] = DEFAULT_PATTERNS) -> list[tuple[Path, str]]:
    return scan_adr_folder(root, patterns)[0]


def _inside(path: Path, base: Path) -> bool:
    try:
        return path.resolve().is_relative_to(base)
    except (OSError, RuntimeError):  # a symlink loop
        return False


def load_adr_folder(
    root: Path, *, patterns: Iterable[str] = DEFAULT_PATTERNS, max_bytes: int = MAX_BYTES
) -> tuple[list[Adr], list[AdrParseError]]:
    """All ADRs under root (sorted by relative path) and one error per file that could not be read."""
    adrs: list[Adr] = []
    if not root.is_dir():
        return [], [AdrParseError(str(root), "ADR folder does not exist")]
    files, errors = scan_adr_folder(root, patterns)
    parser = FileParser(max_bytes)  # on several cores for a large folder (parse_pool.py)
    unread: list[AdrParseError | None] = []
    for path, rel in files:
        try:
            parser.add(rel, read_bounded(path, rel, max_bytes))
            unread.append(None)
        except AdrParseError as exc:
            unread.append(exc)
    parsed = iter(parser.outcomes())
    for failed in unread:
        outcome = failed if failed is not None else next(parsed)
        if isinstance(outcome, AdrParseError):
            errors.append(outcome)
        else:
            adrs.append(outcome)
    return dedupe_ids(adrs), errors


def dedupe_ids(adrs: list[Adr]) -> list[Adr]:
    """Make ids unique: the first keeps its id, a later duplicate takes its file's name (module doc)."""
    taken = {canonical_id_key(a.adr_id) for a in adrs}
    first: dict[str, Adr] = {}
    out: list[Adr] = []
    for adr in adrs:
        key = canonical_id_key(adr.adr_id)
        if key not in first:
            first[key] = adr
            out.append(adr)
            continue
        stem = posixpath.splitext(adr.path)[0]
        new_id = next(
            (c for c in (adr_stem(adr.path), stem, adr.path) if canonical_id_key(c) not in taken), adr.path
        )
        taken.add(canonical_id_key(new_id))
        first.setdefault(canonical_id_key(new_id), adr)
        note = f"{adr.adr_id} is also the id of {first[key].path}: this file is listed as {new_id}"
        extra = {**adr.extra, "original_id": adr.adr_id}
        out.append(dataclasses.replace(adr, adr_id=new_id, extra=extra, notes=(*adr.notes, note)))
    return out


def load_adr_folder_cached(
    root: Path,
    cache_file: Path | None = None,
    *,
    meanwhile: Callable[[], object] | None = None,
    side: SideWork | None = None,
) -> tuple[list[Adr], list[AdrParseError]]:
    """`load_adr_folder`, reusing earlier parses of unchanged files (same bytes, same parser): the
    parses are kept in `cache_file` (JSON, beside the index; app/adr_review/adapters/parse_cache.py). A file
    whose size and mtime are unchanged is not read at all. `meanwhile`, `side`: see parse_pool.py
    (`side` sees only the files parsed now, and only when they are parsed in workers)."""
    if cache_file is None or not root.is_dir():
        return load_adr_folder(root)
    from adr_review.adapters import parse_cache

    cache = parse_cache.ParseCache(cache_file, _parser_version())
    files, errors = scan_adr_folder(root)
    # What the cache has, the rest parsed together (parse_pool.py: on several cores), then in file order.
    # A row: (rel, stat, digest, the cached Adr or error, or None: parse it; a read error to record).
    rows: list[tuple[str, os.stat_result | None, str, Adr | AdrParseError | None, bool]] = []
    parser = FileParser(MAX_BYTES, side)
    for path, rel in files:
        try:
            st: os.stat_result | None = path.stat()
        except OSError:
            st = None
        hit = cache.trusted(rel, st) if st is not None else None
        digest = ""
        data: bytes | None = None
        try:
            if hit is None:
                data = read_bounded(path, rel)  # the size is checked before a byte is read
                digest = hashlib.sha256(data).hexdigest()
                hit = cache.matching(rel, st, digest) if st is not None else None
            if hit is not None:
                try:
                    cached = AdrParseError(rel, str(hit["error"])) if "error" in hit else cache.adr(rel, hit)
                    rows.append((rel, st, digest, cached, False))
                    continue
                except (SerdeError, KeyError, TypeError, ValueError, IndexError):
                    digest = digest or hit.get("sha256", "")
            parser.add(rel, data if data is not None else read_bounded(path, rel))
            rows.append((rel, st, digest, None, False))
        except AdrParseError as exc:
            rows.append((rel, st, digest, exc, True))
    parsed = iter(parser.outcomes(meanwhile))
    adrs: list[Adr] = []
    for rel, st, digest, known, record in rows:
        outcome = next(parsed) if known is None else known
        if isinstance(outcome, AdrParseError):
            errors.append(outcome)
            # a file too large is not opened again
            if (record or known is None) and st is not None and (digest or st.st_size > MAX_BYTES):
                cache.put_error(rel, outcome.reason, st, digest)
        else:
            adrs.append(outcome)
            if known is None:
                cache.put_adr(rel, outcome, st)
    cache.save()
    return dedupe_ids(adrs), errors


def unchanged_adr_folder(root: Path, cache_file: Path) -> UnchangedFolder | None:
    """The folder as `load_adr_folder_cached` last saw it, from the cache's manifest alone, when no
    file changed (size, mtime) and none came or went; None otherwise (then load it)."""
    from adr_review.adapters import parse_cache

    if not root.is_dir():
        return None
    files, errors = scan_adr_folder(root)
    cache = parse_cache.ParseCache(cache_file, _parser_version())
    return parse_cache.unchanged_folder(files, errors, cache, dedupe_ids)


def _parser_version() -> str:
    """Hash of the parser's source: any change to parsing invalidates the cache."""
    from adr_review.core import adr, adr_paths, text

    h = hashlib.sha256()
    parser = sorted(Path(str(adr.__file__)).parent.glob("*.py"))  # every module of the package
    for source in (*parser, __file__, text.__file__, adr_paths.__file__):
        h.update(Path(str(source)).read_bytes())
    return h.hexdigest()[:16]


def folder_listing(root: Path) -> list[str]:
    """Every file under root for `adr-review list`, relative and sorted: symlinked folders are not
    entered, a hidden folder is one entry ("x/.drafts/"), hidden files other than Markdown are left out."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        hidden = [d for d in dirnames if d.startswith(".")]
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        out += [f"{prefix}{d}/" for d in hidden]
        out += [f"{prefix}{f}" for f in filenames if not f.startswith(".") or is_markdown(f)]
    return sorted(out)
