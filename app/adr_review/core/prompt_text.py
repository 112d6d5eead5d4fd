"""What every prompt builder does with languages and untrusted text, written once. Pure.

`our_tags` makes the pattern of a prompt's own delimiter tags (`<proposal>`, `<adr_document>`, ...):
text from an ADR, a diff or a model answer that holds one of them is rewritten before it is put
between them, so it cannot close the delimiter and pose as instructions.
"""

from __future__ import annotations

import re

LANGUAGE_NAMES = {"ja": "Japanese (日本語)", "en": "English"}  # what a prompt calls an output language


def our_tags(*names: str) -> re.Pattern[str]:
    """The opening or closing form of any of the tags `names`, spaced or with attributes, any case."""
    return re.compile(rf"<\s*/?\s*({'|'.join(map(re.escape, names))})\b[^>]*>", re.IGNORECASE)
