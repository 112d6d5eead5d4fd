"""Which files in an ADR folder are ADRs: a pure name rule shared by the disk loader, the remote
folder reader and the PR use case (so a README or template is never reviewed, indexed or cited)."""

from __future__ import annotations

import re

# Files that live in ADR folders but are not ADRs (compared case-insensitively on the file name).
SKIP_NAMES = frozenset({"readme.md", "index.md", "readme.markdown", "index.markdown", "summary.md", "toc.md"})
_TEMPLATE = re.compile(r"(^|[-_.\s])template([-_.\s]|$)", re.IGNORECASE)


def is_adr_candidate(rel: str) -> bool:
    """False for READMEs, indexes, templates and anything under a hidden directory."""
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts[:-1]) or parts[-1].startswith("."):
        return False
    name = parts[-1].casefold()
    if name in SKIP_NAMES:
        return False
    stem = name.rsplit(".", 1)[0]
    return not _TEMPLATE.search(stem)
