"""Checking what a finding says against the ADR: its quote, the ADR ids it names, the Judge's exclusions. Pure.

A finding's `quote` must be one passage of the ADR as a reader sees it, checked exactly like a citation
reason (app/adr_review/core/citations.py: NFKC + whitespace folding, one block, substance), and every ADR id it
names must be one the critics were shown: the ADR itself, what its text names, the recall citations.
A finding that fails is kept apart as unverified (labelled with why), never shown as a finding.

A Judge's exclusion ("already covered by the ADR") holds only when its quote is a passage of the ADR, in
a section that can cover a risk (COVERING_SECTIONS), and an independent check call confirms it is about
the finding's subject; otherwise the finding is put back. A verbatim sentence is not enough: any Context
sentence is verbatim, and covers nothing. The content terms the passage shares with the finding's quote
and gap (subject_overlap) only sort the claims: below UNSURE_SUBJECT_OVERLAP the code rejects; from it
up the claim is `unsure` and holds only when the check confirms it (settle_unsure). Shared terms never
accept a claim on their own: measured, no bound does that safely (UNSURE_SUBJECT_OVERLAP's comment).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from adr_review.core.adr import Adr, canonical_id_key, fold_id
from adr_review.core.citations import EMPTY_REASON, TOO_SHORT, QuoteCheck, check_quote
from adr_review.core.findings import content_tokens
from adr_review.core.passages import Passage, is_markdown_path, passages_of, reader_passages
from adr_review.core.results import Exclusion, Finding, Unverified

_ADR_ID = re.compile(r"(?<![A-Za-z0-9])ADR[-_ ]?\d+(?:-\d+)*(?![0-9])", re.IGNORECASE)
_PROBLEMS: Mapping[str, Unverified] = {EMPTY_REASON: "no_quote", TOO_SHORT: "quote_too_short"}


def adr_ids_named(*texts: str) -> tuple[str, ...]:
    """The ADR ids a text names, in order, each once: found after fold_id, the folding ids are compared
    with (`ADR 0999`, `ADR–0777`, `ADR‑0444`, full-width and invisible-split ids all count)."""
    found = (m.group(0) for t in texts for m in _ADR_ID.finditer(fold_id(t or "")))
    return tuple(dict.fromkeys(found))


def known_adr_ids(adr_id: str, passages: Sequence[Passage], shown: Iterable[str] = ()) -> frozenset[str]:
    """id_keys of the ADRs a critic was shown: the ADR itself, every ADR its visible text names, and
    `shown` (the recall citations given as context)."""
    ids = [adr_id, *shown, *adr_ids_named(*(p.text for p in passages))]
    return frozenset(canonical_id_key(i) for i in ids if i)


def verify_finding(finding: Finding, passages: Sequence[Passage], known: frozenset[str]) -> Finding:
    """The finding with its quote as verified and its section read from where the quote stands, or
    labelled `unverified` (the quote is not one passage of the ADR, or it names an unknown ADR)."""
    check = check_quote(finding.quote, passages)
    if not check.ok:
        return replace(finding, unverified=_PROBLEMS.get(check.problem or "", "quote_not_found"))
    named = adr_ids_named(finding.title, finding.gap, finding.suggested_action)
    unknown = tuple(i for i in named if canonical_id_key(i) not in known)
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


# The canonical sections (app/adr_review/core/adr/vocabulary.py SECTIONS) whose statements can cover a risk:
# what the ADR says can go wrong, what it costs, what it weighed instead, what it decides, how it backs
# out. Context, status and confirmation describe; they cover nothing.
COVERING_SECTIONS = ("risks", "consequences", "alternatives", "decision", "rollback")
# The share of content terms (function words out; CJK as kanji / katakana bigrams; an English plural
# folded; the ADR title's terms left out) that the covering passage and the finding's quote + gap have
# in common, over the smaller of the two term sets (subject_overlap).
# No share lets the code accept a claim with no call; no upper bound does that safely:
# measured with benchmarks/judge_band.py on the golden critic findings against the covering sentences of
# the seven corpora (docs/benchmarks.md, "Judge exclusions: the check band"), off-subject pairs reach 1.0
# in every collection (a finding against the very sentence it quotes, or a short one sharing its only
# terms), and passages that do cover a finding in other words score 0.17-0.67. Chosen leave-one-
# collection-out (no hand-labelled off-subject pair of the other collections above the bound): "never"
# in every fold. So no overlap accepts on its own: every claim in a covering section at or above
# UNSURE_SUBJECT_OVERLAP is asked of the independent check (at most MAX_CHECKS per ADR, the rest shown).
# The lower edge: a claim in a covering section scoring below it is rejected with no call (its finding
# shown); from it up, the independent check call decides (CoVe-style,
# app/adr_review/pipeline/adr/blindspot_cover.py). Chosen on the golden Judge pairs: 17 of the 78
# off-subject pairs score >= 0.20 (3 >= 0.25, at most 0.333), every golden exclusion >= 0.60; on the
# benchmark 1 of 28 covering pairs (hand-written, paraphrased) scores below it (0.167).
UNSURE_SUBJECT_OVERLAP = 0.2

Rejection = Literal["not_verbatim", "not_covering_section", "off_subject", "unknown_id", "not_confirmed"]


def quote_in_sections(quote: str, adr: Adr, names: Sequence[str]) -> tuple[str, QuoteCheck] | None:
    """(section, check) for the first canonical section of `names` whose text (as the parser cut it)
    has `quote` as one passage, checked like any quote; None when it stands elsewhere or nowhere."""
    markdown = is_markdown_path(adr.path)
    for name in names:
        text = adr.sections.get(name) or ""
        if not text.strip():
            continue
        check = check_quote(quote, reader_passages(text, markdown=markdown))
        if check.ok:
            return name, check
    return None


def covering_section(quote: str, adr: Adr) -> str | None:
    """The first of COVERING_SECTIONS that has `quote` as one passage, or None: the quote stands
    elsewhere (Context, a heading, the title) or nowhere."""
    found = quote_in_sections(quote, adr, COVERING_SECTIONS)
    return found[0] if found else None


_PLURAL = re.compile(r"(?<=[a-z]{3})s$")  # "timeouts" / "timeout", not "process" (subject_terms)


def subject_terms(text: str) -> frozenset[str]:
    """The content terms of `text` (app/adr_review/core/findings.py content_tokens), an English plural or third
    person "-s" folded away, so "timeouts block workers" and "blocks one worker ... timeout" share
    three terms, not none."""
    return frozenset(t if t.endswith("ss") else _PLURAL.sub("", t) for t in content_tokens(text))


def finding_subject(finding: Finding) -> str:
    """What a finding is about, as subject_overlap reads it: its quote and gap (its title restates them)."""
    return f"{finding.quote}\n{finding.gap}"


def terms_overlap(covering: frozenset[str], about: frozenset[str], background: frozenset[str]) -> float:
    """subject_overlap on term sets (subject_terms of the passage, of finding_subject, of the topic)."""
    covering = covering - background or covering
    about = about - background or about
    if not covering or not about:
        return 0.0
    return len(covering & about) / min(len(covering), len(about))


def subject_overlap(passage: str, finding: Finding, topic: str = "") -> float:
    """How much the covering passage and the finding talk about the same things, 0..1: the content
    terms they share over the smaller term set (the finding's quote and gap; its title restates them).

    The terms of `topic` (the ADR's title) are left out on both sides while anything else is left:
    every passage of the ADR shares them ("review", "queue" in "Queue the reviews"), so they say
    nothing about which of its subjects a passage is on.
    """
    return terms_overlap(
        subject_terms(passage), subject_terms(finding_subject(finding)), subject_terms(topic)
    )


@dataclass(frozen=True)
class ExclusionCheck:
    """The code's verdict on one "this passage covers that finding" claim: `rejected` is None when
    the code finds nothing against it; it then holds only if the independent check confirms it."""

    rejected: Rejection | None
    quote: QuoteCheck
    covered_in: str = ""  # the canonical section of COVERING_SECTIONS the passage stands in


def check_exclusion(quote: str, finding: Finding, adr: Adr) -> ExclusionCheck:
    """Whether `quote` may cover `finding`: a passage of the ADR, in a covering section, sharing enough
    of its subject's terms to be worth the check call."""
    check = check_quote(quote, passages_of(adr))
    if not check.ok:
        return ExclusionCheck("not_verbatim", check)
    section = covering_section(check.quote, adr)
    if section is None:
        return ExclusionCheck("not_covering_section", check)
    overlap = subject_overlap(check.quote, finding, adr.title)
    if overlap < UNSURE_SUBJECT_OVERLAP:
        return ExclusionCheck("off_subject", check, section)
    return ExclusionCheck(None, check, section)


@dataclass(frozen=True)
class UnsureClaim:
    """A claim the terms cannot decide: the finding, the passage, and the exclusion it would become."""

    fid: str
    finding: Finding
    exclusion: Exclusion
    restore: bool = True  # not confirmed: show the finding (False: a judged finding already merged it)


@dataclass(frozen=True)
class JudgeExclusions:
    exclusions: tuple[Exclusion, ...]  # held (confirmed by the check): "already covered by the ADR"
    restored: tuple[Finding, ...]  # critic findings whose exclusion did not hold: shown again
    rejected: Mapping[Rejection, int]  # claims that did not hold, by why (absent when 0)
    unsure: tuple[UnsureClaim, ...] = ()  # awaiting the independent check (settle_unsure)
    shown: frozenset[str] = frozenset()  # critic ids already shown, merged or restored
    confirmed: int = 0  # unsure claims the independent check confirmed (now among `exclusions`)


def judge_exclusions(
    claims: Sequence[tuple[str, str]],
    by_id: Mapping[str, Finding],
    adr: Adr,
    shown_ids: Iterable[str] = (),
) -> JudgeExclusions:
    """Check the Judge's (finding id, covering quote) claims against the ADR (the module doc's rule).

    A claim the code finds nothing against is kept apart in `unsure`, neither excluded nor restored,
    until the independent check decides it (settle_unsure): no claim is an Exclusion before that. Any
    other claim does not count: the critic finding it would hide is restored (unless a judged finding
    already merged it, `shown_ids`), so the Judge cannot make a finding disappear by quoting a
    sentence that does not cover it.
    """
    shown = set(shown_ids)
    restored: list[Finding] = []
    rejected: dict[Rejection, int] = {}
    unsure: list[UnsureClaim] = []
    for fid, quote in claims:
        finding = by_id.get(fid)
        if finding is None:
            rejected["unknown_id"] = rejected.get("unknown_id", 0) + 1
            continue
        verdict = check_exclusion(quote, finding, adr)
        if verdict.rejected is None:
            heading = verdict.quote.passage.section if verdict.quote.passage else ""
            exclusion = Exclusion(
                finding.title, verdict.quote.quote, heading, "judge", finding.source, verdict.covered_in
            )
            unsure.append(UnsureClaim(fid, finding, exclusion, restore=fid not in shown))
            shown.add(fid)
            continue
        rejected[verdict.rejected] = rejected.get(verdict.rejected, 0) + 1
        if fid not in shown:
            restored.append(finding)
            shown.add(fid)
    return JudgeExclusions((), tuple(restored), rejected, tuple(unsure), frozenset(shown))


def settle_unsure(claims: JudgeExclusions, confirmed: Sequence[bool]) -> JudgeExclusions:
    """The claims with each unsure one decided by the independent check (`confirmed`, one per unsure
    claim, in order; a missing entry is not confirmed): confirmed ones become exclusions, the others
    are counted as `not_confirmed` and their finding is shown, as for any claim that does not hold."""
    exclusions = list(claims.exclusions)
    restored = list(claims.restored)
    rejected = dict(claims.rejected)
    restored_ids: set[str] = set()
    yes = 0
    for i, claim in enumerate(claims.unsure):
        if i < len(confirmed) and confirmed[i]:
            exclusions.append(claim.exclusion)
            yes += 1
            continue
        rejected["not_confirmed"] = rejected.get("not_confirmed", 0) + 1
        if claim.restore and claim.fid not in restored_ids:
            restored.append(claim.finding)
            restored_ids.add(claim.fid)
    return JudgeExclusions(
        tuple(exclusions), tuple(restored), rejected, (), claims.shown, claims.confirmed + yes
    )


def dropped_by_judge(
    critic_ids: Iterable[str], merged_ids: Iterable[str], claimed_ids: Iterable[str]
) -> tuple[str, ...]:
    """The critic findings the Judge left out of its answer altogether: neither merged into one of its
    findings nor claimed as covered. Its prompt allows no other way out, so these are what it dropped
    as dissent that would apply to any decision; the comment counts them."""
    accounted = {*merged_ids, *claimed_ids}
    return tuple(i for i in critic_ids if i not in accounted)


def code_exclusions(covered: Sequence[tuple[Finding, str]], adr: Adr) -> tuple[Exclusion, ...]:
    """The code guard's exclusions, each with the statement of the ADR's own risks that covers it."""
    out = []
    passages = passages_of(adr)
    for finding, item in covered:
        check = check_quote(item, passages)
        section = check.passage.section if check.passage else ""
        covered_in = covering_section(item, adr) or ""
        out.append(Exclusion(finding.title, item, section, "code", finding.source, covered_in))
    return tuple(out)
