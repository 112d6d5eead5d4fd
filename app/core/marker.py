"""The hidden first line of every comment this tool writes, `<!-- adr-review:v1 path=… key=… -->`:
written here and parsed here only, so the renderer and the GitHub adapter cannot drift apart."""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

from app.core.markdown_safe import clean

MARKER_PREFIX = "<!-- adr-review:v1"
_KEY = r"[A-Za-z0-9_.:-]{1,128}"
_MARKER_RE = re.compile(rf"^<!-- adr-review:v1 path=(\S+) key=({_KEY}) -->[ \t]*$")


def marker(path: str, run_key: str) -> str:
    """The hidden first line that finds this ADR's comment again. The path is percent-encoded, so a
    file name cannot end the comment or forge a key."""
    if not re.fullmatch(_KEY, run_key):
        raise ValueError(f"run key {run_key!r} is not marker-safe")
    return f"{MARKER_PREFIX} path={quote(clean(path), safe='/')} key={run_key} -->"


def parse_marker(body: str) -> tuple[str, str] | None:
    """(ADR path, run key) from a comment written by render_comment, else None. Only the first line
    counts: untrusted text further down cannot pose as the marker."""
    first = body.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    m = _MARKER_RE.match(first)
    if not m:
        return None
    return unquote(m.group(1)), m.group(2)
