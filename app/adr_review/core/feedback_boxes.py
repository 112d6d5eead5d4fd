"""The Adopted boxes of a comment: each shown finding's (or guard answer's) stable id and task-list
line, read back and carried over re-renders (app/adr_review/core/feedback.py: the ledger). Pure.

    - [ ] Adopted <!-- adr-review:finding=3fa2c1d0 -->

GitHub lets only the comment's author and people with write access tick another user's comment, so a
tick in our comment is a collaborator's (the App still checks who edited, from `issue_comment.edited`).
Every reader here goes line by line with plain string tests: linear in the body.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

from adr_review.core.results import Finding

ID_LEN = 8
ID_PATTERN = re.compile(rf"[0-9a-f]{{{ID_LEN}}}")
_BOX_TAG = "<!-- adr-review:finding="


def finding_id(adr_path: str, finding: Finding) -> str:
    """8 hex digits from the ADR's path, the finding's topic and its quote: the same review shows the same
    ids (its stages are content-addressed), and two ADRs of one PR never share one."""
    topic = (finding.dedupe_group or finding.title).casefold().strip()
    digest = hashlib.sha256("\0".join((adr_path, topic, finding.quote.strip())).encode()).hexdigest()
    return digest[:ID_LEN]


def finding_ids(adr_path: str, findings: Sequence[Finding]) -> tuple[str, ...]:
    """The ids of findings shown together, distinct (`distinct_ids`)."""
    return distinct_ids(finding_id(adr_path, f) for f in findings)


def distinct_ids(ids: Iterable[str]) -> tuple[str, ...]:
    """Ids of boxes shown together made distinct: a collision takes the next digits of a re-hash (the
    findings of one ADR's comment, the answers of the guard's)."""
    seen: set[str] = set()
    out = []
    for fid in ids:
        salt = 0
        while fid in seen:
            salt += 1
            fid = hashlib.sha256(f"{fid}:{salt}".encode()).hexdigest()[:ID_LEN]
        seen.add(fid)
        out.append(fid)
    return tuple(out)


def perspective_of(finding: Finding) -> str:
    """What the report groups dismissals by: the Devil's Advocate perspective it came through, else the
    critic (with the pre-mortem's category)."""
    if finding.perspective:
        return finding.perspective
    critic = finding.source[0] if finding.source else "unknown"
    return f"{critic}/{finding.category}" if finding.category else critic


def checkbox(fid: str, label: str) -> str:
    """The task-list line of one finding (`label` is a trusted template string)."""
    if not ID_PATTERN.fullmatch(fid):
        raise ValueError(f"finding id {fid!r} is not {ID_LEN} hex digits")
    return f"- [ ] {label} {_BOX_TAG}{fid} -->"


def read_ticks(body: str) -> dict[str, bool]:
    """finding id -> ticked, for each of our checkbox lines in a comment body. Line by line with plain
    string tests (linear in the body); anything that is not exactly our line shape is ignored."""
    out: dict[str, bool] = {}
    for line in body.splitlines():
        parsed = _box(line)
        if parsed is not None:
            out[parsed[0]] = parsed[1]
    return out


def _box(line: str) -> tuple[str, bool] | None:
    s = line.strip()
    if len(s) < 6 or not s.startswith(("- [", "* [")) or s[4] != "]" or s[3] not in " xX":
        return None
    end = s.rfind(_BOX_TAG)
    if end < 0 or not s.endswith("-->"):
        return None
    fid = s[end + len(_BOX_TAG) : -3].strip()
    return (fid, s[3] != " ") if ID_PATTERN.fullmatch(fid) else None


def tick_changes(before: str, after: str) -> dict[str, bool]:
    """The checkboxes an edit changed: id -> ticked now (a box added or removed by the edit is not a tick)."""
    old, new = read_ticks(before), read_ticks(after)
    return {fid: ticked for fid, ticked in new.items() if fid in old and old[fid] != ticked}


def rename_boxes(body: str, renames: Mapping[str, str]) -> str:
    """`body` with the boxes of `renames`' ids showing their new ids (a finding shown before, in other
    words, keeps its id: see shown_ids). Only our box lines change; their label is a trusted string."""
    if not any(old != new for old, new in renames.items()):
        return body
    lines = body.split("\n")
    for i, line in enumerate(lines):
        parsed = _box(line)
        if parsed is not None and renames.get(parsed[0], parsed[0]) != parsed[0]:
            lines[i] = line.replace(parsed[0], renames[parsed[0]])
    return "\n".join(lines)


def carry_ticks(body: str, ticked: Iterable[str]) -> str:
    """`body` with the boxes of `ticked` ids ticked: a re-render keeps what reviewers ticked."""
    keep = set(ticked)
    if not keep:
        return body
    lines = body.split("\n")
    for i, line in enumerate(lines):
        parsed = _box(line)
        if parsed is not None and parsed[0] in keep and not parsed[1]:
            at = line.index("[ ]")
            lines[i] = line[:at] + "[x]" + line[at + 3 :]
    return "\n".join(lines)
