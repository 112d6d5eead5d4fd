"""The Changelog section's dated entries (Tendermint's and hermes' `## Changelog`, a list of "date:
what happened").

Its earliest date is the ADR's date when nothing else states one. Its latest entry that is a status
on its own ("28.06.2022: Accepted.") is the decision when the Status section was never moved on from
proposed: hermes' ADR-010 says "Proposed." under `## Status` and "Accepted." in its Changelog a week
later, and the guard did not hold the code PRs that carried it out to it. An entry that only mentions a
status word ("Final updates before publishing", "Renamed the accepted proposal") is not a status.

Every pattern runs on one line capped at MAX_LINE, with bounded repeats only: linear in the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from adr_review.core.adr.fields import norm_date
from adr_review.core.adr.markdown import plain_text
from adr_review.core.adr.model import Heading, Status
from adr_review.core.adr.sections import heading_key
from adr_review.core.adr.vocabulary import STATUS_WORDS

MAX_LINE = 2_000
CHANGELOG_HEADINGS = frozenset({"changelog", "change log", "release history"})
# Statuses a dated entry may set over a Status section still at proposed: the decision was taken.
DECISIONS: frozenset[Status] = frozenset({"accepted", "rejected", "deprecated", "superseded"})

_DATE = (
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"
    r"|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}"
    r"|\d{4}\s{0,3}年\s{0,3}\d{1,2}\s{0,3}月\s{0,3}\d{1,2}\s{0,3}日"
    r"|\d{4}-\d{2}"
)
# "* 15.06.2022: Accepted.", "- **2020-07-22** (@author) - First draft", "1. 2024年3月1日 承認"
_ENTRY = re.compile(
    rf"^\s{{0,8}}(?:[*+-]|\d{{1,3}}[.)])?\s{{0,8}}[*_~\[(]{{0,4}}\s{{0,3}}({_DATE})\s{{0,3}}[*_~\])]{{0,4}}"
    r"\s{0,3}(?:\([^()]{0,80}\))?\s{0,3}[:：,\-–—]?\s{0,8}(.*)$"
)
# Where a status phrase ends: punctuation, a dash, or the "by whom / in which PR" that follows it.
_PHRASE_END = re.compile(r"[.;:,!?()\[\]。、（）]|\s[-–—]\s|\s(?:by|in|on|at|via|after|with)\s")
_LEAD = re.compile(r"^(?:status\s{0,3}(?::|changed\s+to|set\s+to)|marked(?:\s+as)?|moved\s+to)\s+")
_STATUS_KEYS = {k.casefold().replace("-", " "): v for k, v in STATUS_WORDS.items()}


@dataclass(frozen=True)
class ChangelogEntry:
    date: str  # ISO (YYYY-MM-DD, or YYYY-MM when that is all it says)
    text: str  # the entry after its date, as plain text
    status: Status  # what the entry sets when it is a status on its own, else "unknown"


def changelog_entries(lines: Sequence[str], headings: Sequence[Heading]) -> tuple[ChangelogEntry, ...]:
    """The dated entries of the first Changelog section that has any, in the order written (a line
    dated anywhere counts; only one that starts with its date can state a status)."""
    for idx, h in enumerate(headings):
        if heading_key(h.text) not in CHANGELOG_HEADINGS:
            continue
        end = headings[idx + 1].line if idx + 1 < len(headings) else len(lines)
        found = tuple(e for line in lines[h.end : end] if (e := _entry(line)))
        if found:
            return found
    return ()


def logged_decision(entries: Sequence[ChangelogEntry]) -> ChangelogEntry | None:
    """The latest entry (by date, then by place) that states a status, when that status is a
    decision; None when the latest status logged is proposed or none is."""
    stated = [(e.date, i, e) for i, e in enumerate(entries) if e.status != "unknown"]
    if not stated:
        return None
    latest = max(stated)[2]
    return latest if latest.status in DECISIONS else None


def _entry(line: str) -> ChangelogEntry | None:
    line = line[:MAX_LINE]
    m = _ENTRY.match(line)
    date = norm_date(m.group(1)) if m else None
    if m and date:
        text = plain_text(m.group(2), MAX_LINE).strip()
        return ChangelogEntry(date=date, text=text[:300], status=_status_phrase(text))
    # A date inside the entry ("Initial draft (2020-01-01)") still dates the ADR; it states no status.
    date = norm_date(line)
    return ChangelogEntry(date=date, text=plain_text(line, 300).strip(), status="unknown") if date else None


def _status_phrase(text: str) -> Status:
    head = _LEAD.sub("", text.casefold().strip("*_~` "))
    head = _PHRASE_END.split(head, maxsplit=1)[0].strip("*_~` ")
    return _STATUS_KEYS.get(re.sub(r"\s+", " ", head).replace("-", " "), "unknown")
