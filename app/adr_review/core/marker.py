"""The hidden first line of every comment this tool writes,
`<!-- adr-review:v1 path=… key=… [head=… order=…] -->`: written here and parsed here only, so the
renderer, the publisher and the GitHub adapter cannot drift apart.

`head` and `order` name the PR head the review was made for and the order in which that head's push
arrived (issue 16: a comment whose marker names a newer head is never overwritten). Both are optional:
markers written before them (path and key only) still parse, with head and order None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from adr_review.core.markdown_safe import clean

MARKER_PREFIX = "<!-- adr-review:v1"
_KEY = r"[A-Za-z0-9_.:-]{1,128}"
_HEAD = r"[0-9A-Za-z]{1,64}"  # a commit SHA (fakes in tests use other letters)
_MARKER_RE = re.compile(
    rf"^<!-- adr-review:v1 path=(\S+) key=({_KEY})(?: head=({_HEAD}))?(?: order=(\d{{1,18}}))? -->[ \t]*$"
)


@dataclass(frozen=True)
class Marker:
    path: str
    key: str
    head: str | None = None  # the PR head the review was made for
    order: int | None = None  # when that head's push arrived, relative to the PR's other heads

    def newer_than(self, head: str, order: int | None) -> bool:
        """This marker names another head that arrived after `head` (pushed as `order`)."""
        return (
            self.head is not None
            and self.head != head
            and self.order is not None
            and order is not None
            and self.order > order
        )


def marker(path: str, run_key: str, *, head: str | None = None, order: int | None = None) -> str:
    """The hidden first line that finds this ADR's comment again. The path is percent-encoded, so a
    file name cannot end the comment or forge a key."""
    if not re.fullmatch(_KEY, run_key):
        raise ValueError(f"run key {run_key!r} is not marker-safe")
    line = f"{MARKER_PREFIX} path={quote(clean(path), safe='/')} key={run_key}"
    if head is not None:
        if not re.fullmatch(_HEAD, head):
            raise ValueError(f"head {head!r} is not marker-safe")
        line += f" head={head}"
        if order is not None:
            line += f" order={int(order)}"
    return line + " -->"


def read_marker(body: str) -> Marker | None:
    """The marker of a comment written by this tool, else None. Only the first line counts: untrusted
    text further down cannot pose as the marker."""
    first = body.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    m = _MARKER_RE.match(first)
    if not m:
        return None
    return Marker(unquote(m.group(1)), m.group(2), m.group(3), int(m.group(4)) if m.group(4) else None)


def parse_marker(body: str) -> tuple[str, str] | None:
    """(ADR path, run key) of the marker, else None."""
    m = read_marker(body)
    return (m.path, m.key) if m is not None else None


def with_marker(body: str, m: Marker) -> str:
    """The body with `m` as its marker line (replacing the one it has, if any)."""
    line = marker(m.path, m.key, head=m.head, order=m.order)
    return line + "\n" + without_marker(body)


def without_marker(body: str) -> str:
    """The text a reader sees: the body without its marker line (the whole body when it has none)."""
    if read_marker(body) is None:
        return body
    rest = body.lstrip("\ufeff").split("\n", 1)
    return rest[1] if len(rest) > 1 else ""
