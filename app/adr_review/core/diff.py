"""A unified diff (git diff, git show, GitHub's .diff) -> the files it changes and their added and
removed lines. Pure, linear, and total: any text parses (what is not a diff yields no files).

The guard's query and its evidence both come from here: a diff line quoted in a comment must be one
of the `added` or `removed` lines this parser returns (app/adr_review/core/guard.py checks it).

One pass over the lines. A file starts at `diff --git a/X b/Y` (or at a `--- ` / `+++ ` pair without
one, as `diff -u` writes); a hunk at `@@ -a,b +c,d @@`, whose counts say how many lines belong to it,
so a removed line that reads `--- x` or an added one that reads `+++ y` is content, not a header.
Binary files, mode changes and renames without content carry no lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

ChangeKind = Literal["added", "deleted", "modified", "renamed"]

_GIT_HEADER = re.compile(r"^diff --git (?:\"?a/)?(.*?)\"? (?:\"?b/)?(.*?)\"?$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_MAX_LINE = 2_000  # a longer diff line (minified code, a data blob) is kept cut to this


@dataclass(frozen=True)
class DiffLine:
    text: str  # the line without its +/- sign
    number: int  # its line number in the new file (added) or the old one (removed)


@dataclass(frozen=True)
class DiffFile:
    path: str  # the new path ("/dev/null" never: a deleted file keeps its old path)
    old_path: str
    kind: ChangeKind
    added: tuple[DiffLine, ...] = ()
    removed: tuple[DiffLine, ...] = ()
    binary: bool = False


@dataclass
class _Open:
    old: str = ""
    new: str = ""
    deleted: bool = False
    created: bool = False
    binary: bool = False
    added: list[DiffLine] = field(default_factory=list)
    removed: list[DiffLine] = field(default_factory=list)

    def close(self) -> DiffFile | None:
        old, new = _strip(self.old), _strip(self.new)
        if not old and not new:
            return None
        path = old if self.deleted or not new or new == "/dev/null" else new
        old_path = old if old and old != "/dev/null" else path
        kind: ChangeKind
        if self.deleted or new == "/dev/null":
            kind = "deleted"
        elif self.created or old == "/dev/null":
            kind = "added"
        elif old_path != path:
            kind = "renamed"
        else:
            kind = "modified"
        return DiffFile(path, old_path, kind, tuple(self.added), tuple(self.removed), self.binary)


def _strip(path: str) -> str:
    p = path.strip().strip('"')
    if p.startswith(("a/", "b/")):
        p = p[2:]
    return p.split("\t", 1)[0]


def parse_diff(text: str) -> tuple[DiffFile, ...]:
    """The files of a unified diff, in order, each with its added and removed lines."""
    return tuple(_files(text.splitlines()))


def _files(lines: Iterable[str]) -> Iterable[DiffFile]:
    current: _Open | None = None
    old_left = new_left = 0  # lines still due in the current hunk
    old_no = new_no = 0
    for raw in lines:
        line = raw[:_MAX_LINE]
        if old_left > 0 or new_left > 0:
            if current is not None and (line[:1] in ("+", "-", " ") or line == ""):
                sign, body = (line[:1] or " "), line[1:]
                if sign == "+" and new_left > 0:
                    current.added.append(DiffLine(body, new_no))
                    new_no, new_left = new_no + 1, new_left - 1
                    continue
                if sign == "-" and old_left > 0:
                    current.removed.append(DiffLine(body, old_no))
                    old_no, old_left = old_no + 1, old_left - 1
                    continue
                if sign == " " and old_left > 0 and new_left > 0:
                    old_no, new_no, old_left, new_left = old_no + 1, new_no + 1, old_left - 1, new_left - 1
                    continue
            if line.startswith("\\"):  # "\ No newline at end of file"
                continue
            old_left = new_left = 0  # a short hunk: the header's counts were wrong; read on as headers
        git = _GIT_HEADER.match(line)
        if git:
            if current is not None and (done := current.close()) is not None:
                yield done
            current = _Open(old=git.group(1), new=git.group(2))
            continue
        if line.startswith("--- ") and (current is None or current.added or current.removed):
            if current is not None and (done := current.close()) is not None:
                yield done
            current = _Open(old=line[4:])
            continue
        if current is None:
            continue
        hunk = _HUNK.match(line)
        if hunk:
            old_no, new_no = int(hunk.group(1)), int(hunk.group(3))
            old_left = 1 if hunk.group(2) is None else int(hunk.group(2))
            new_left = 1 if hunk.group(4) is None else int(hunk.group(4))
        elif line.startswith("--- "):
            current.old = line[4:]
        elif line.startswith("+++ "):
            current.new = line[4:]
        elif line.startswith("deleted file mode"):
            current.deleted = True
        elif line.startswith("new file mode"):
            current.created = True
        elif line.startswith("rename from "):
            current.old = line[len("rename from ") :]
        elif line.startswith("rename to "):
            current.new = line[len("rename to ") :]
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            current.binary = True
    if current is not None and (done := current.close()) is not None:
        yield done
