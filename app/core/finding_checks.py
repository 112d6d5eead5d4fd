"""Checking what a finding says against the ADR: its quote, the ADR ids it names, the Judge's exclusions. Pure.

A finding's `quote` must be one passage of the ADR as a reader sees it, checked exactly like a citation
reason (app/core/citations.py: NFKC + whitespace folding, one block, substance), and every ADR id it
names must be one the critics were shown: the ADR itself, what its text names, the recall citations.
A finding that fails is kept apart as unverified (labelled with why), never shown as a finding. The
Judge's exclusions must name the ADR passage that covers them, or the finding is put back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from app.core.citations import EMPTY_REASON, TOO_SHORT, check_quote, id_key
from app.core.passages import Passage
from app.core.results import Exclusion, Finding, Unverified
from app.core.text import normalize_for_match

_ADR_ID = re.compile(r"(?<![A-Za-z0-9])ADR[-_]?\d+(?:-\d+)*(?![0-9])", re.IGNORECASE)
_PROBLEMS: Mapping[str, Unverified] = {EMPTY_REASON: "no_quote", TOO_SHORT: "quote_too_short"}


def adr_ids_named(*texts: str) -> tuple[str, ...]:
    """The ADR ids a text names (after NFKC: full-width ids count), in order, each once."""
    found = (m.group(0) for t in texts for m in _ADR_ID.finditer(normalize_for_match(t or "")))
    return tuple(dict.fromkeys(found))


def known_adr_ids(adr_id: str, passages: Sequence[Passage], shown: Iterable[str] = ()) -> frozenset[str]:
    """id_keys of the ADRs a critic was shown: the ADR itself, every ADR its visible text names, and
    `shown` (the recall citations given as context)."""
    ids = [adr_id, *shown, *adr_ids_named(*(p.text for p in passages))]
    return frozenset(id_key(i) for i in ids if i)


def verify_finding(finding: Finding, passages: Sequence[Passage], known: frozenset[str]) -> Finding:
    """The finding with its quote as verified and its section read from where the quote stands, or
    labelled `unverified` (the quote is not one passage of the ADR, or it names an unknown ADR)."""
    check = check_quote(finding.quote, passages)
    if not check.ok:
        return replace(finding, unverified=_PROBLEMS.get(check.problem or "", "quote_not_found"))
    named = adr_ids_named(finding.title, finding.gap, finding.suggested_action)
    unknown = tuple(i for i in named if id_key(i) not in known)
    section = check.passage.section if check.passage and check.passage.section else finding.section
    verified = replace(finding, quote=check.quote, section=section)
    if unknown:
        return replace(verified, unverified="unknown_adr", unknown_ids=unknown)
    return verified


def verify_findings(
    findings: Sequence[Finding], passages: Sequence[Passage], known: frozenset[str]
) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
    """(verified, unverified) in their original order."""
    checked = [verify_finding(f, passages, known) for f in findings]
    return (
        tuple(f for f in checked if f.unverified is None),
        tuple(f for f in checked if f.unverified is not None),
    )


@dataclass(frozen=True)
class JudgeExclusions:
    exclusions: tuple[Exclusion, ...]  # verified: listed as "already covered by the ADR"
    restored: tuple[Finding, ...]  # critic findings whose exclusion named no real passage: shown again
    unverified: int  # exclusions that did not verify (restored, or naming no finding the Judge saw)


def judge_exclusions(
    claims: Sequence[tuple[str, str]],
    by_id: Mapping[str, Finding],
    passages: Sequence[Passage],
    shown_ids: Iterable[str] = (),
) -> JudgeExclusions:
    """Check the Judge's (finding id, covering quote) claims against the ADR as a reader sees it.

    A claim whose quote is one passage of the ADR becomes an Exclusion; any other claim does not
    count: the critic finding it would hide is restored (unless a judged finding already merged it,
    `shown_ids`), so the Judge cannot make a finding disappear by inventing the text that covers it.
    """
    shown = set(shown_ids)
    exclusions: list[Exclusion] = []
    restored: list[Finding] = []
    unverified = 0
    for fid, quote in claims:
        finding = by_id.get(fid)
        check = check_quote(quote, passages)
        if finding is not None and check.ok:
            section = check.passage.section if check.passage else ""
            exclusions.append(Exclusion(finding.title, check.quote, section, "judge", finding.source))
            shown.add(fid)
            continue
        unverified += 1
        if finding is not None and fid not in shown:
            restored.append(finding)
            shown.add(fid)
    return JudgeExclusions(tuple(exclusions), tuple(restored), unverified)


def code_exclusions(
    covered: Sequence[tuple[Finding, str]], passages: Sequence[Passage]
) -> tuple[Exclusion, ...]:
    """The code guard's exclusions, each with the statement of the ADR's own risks that covers it."""
    out = []
    for finding, item in covered:
        check = check_quote(item, passages)
        section = check.passage.section if check.passage else ""
        out.append(Exclusion(finding.title, item, section, "code", finding.source))
    return tuple(out)
