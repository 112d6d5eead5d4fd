"""The ADRs a pull request names in its title, body or added lines ("Implements ADR-12", a link to the
ADR's file, a code comment "see ADR-12"). Pure.

A PR that names a decision asks for the change to be held against it, so the guard lists a named ADR
whatever its evidence score (app/adr_review/core/guard.py `implicate`), still only when it is enforced
(accepted, or superseded by an accepted one, which is listed instead), when the diff has lines that
match it and when its decision sentence verifies: naming a proposed ADR enforces nothing, and a
named ADR the diff does not touch is not listed. The text is read by the ADR parser's own link
finder (app/adr_review/core/adr/links.py), so a mention counts here exactly when it counts in an ADR:
not in code spans, not a version number ("MADR 4.0.0").
"""

from __future__ import annotations

from collections.abc import Sequence

from adr_review.core.adr import Adr, AdrParseError, parse_adr
from adr_review.core.evidence import linked_to

# The PR's text is read as the body of a document with a title of its own, so that a title such as
# "ADR-12: move the store" is a mention of ADR-12, not the document's own id (which names nothing).
_DOCUMENT = "# Pull request\n\n{title}\n\n{body}\n"


def named_in(title: str, body: str, folder: Sequence[Adr]) -> tuple[str, ...]:
    """Paths of the folder's ADRs the PR title or body names, in the folder's order."""
    if not title.strip() and not body.strip():
        return ()
    text = _DOCUMENT.format(title=title.strip(), body=body.strip())
    try:
        pr = parse_adr("pull-request.md", text.encode("utf-8"))
    except AdrParseError:  # a text the parser refuses names nothing it could read
        return ()
    return linked_to(pr.links, folder)


# A diff line can name a decision too ("# kept for a year: ADR-0005", a link in a changed README).
# Only added lines that mention "adr" or a Markdown file are read, at most this many and each up to
# this length: a hostile diff of a million such lines, or of one minified megabyte, costs one bounded
# parse.
MAX_NAMING_LINES = 500
MAX_NAMING_LINE = 2_000


def named_in_diff(added: Sequence[str], folder: Sequence[Adr]) -> tuple[str, ...]:
    """Paths of the folder's ADRs that the diff's added lines name, in the folder's order. Each line
    is read on its own, without its indentation (code is indented; Markdown would read it as a code
    block and find no mention), by the same link finder as the PR's text."""
    lines = [t.strip()[:MAX_NAMING_LINE] for t in added if "adr" in t.lower() or ".md" in t.lower()]
    return named_in("", "\n\n".join(lines[:MAX_NAMING_LINES]), folder)
