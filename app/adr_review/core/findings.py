"""Blind-spot findings: normalisation, code-level dedupe, own-risk exclusion, the noise budget. Pure.

The model's labels are not trusted: severities, actionabilities, pre-mortem categories and critic names
are mapped onto their enums here (unknown values get a documented neutral default), FMEA scores are
clamped to 1-5 and their product is recomputed. Nor are its words: app/adr_review/core/finding_checks.py checks
each finding's quote and the ADR ids it names, and the Judge's exclusions. The same checks, dedupe and
exclusion run whether or not the Judge answered, so a Judge failure degrades to "un-judged but still
checked and deduplicated", never to noise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from adr_review.core.passages import reader_passages
from adr_review.core.results import Actionability, Finding, Severity
from adr_review.core.text import normalize, tokenize

SEVERITIES: tuple[Severity, ...] = ("critical", "high", "medium", "low")
ACTIONABILITIES: tuple[Actionability, ...] = ("block", "revise_adr", "add_to_risks", "monitor")
PREMORTEM_CATEGORIES = ("technical", "operational", "business_regulatory", "cognitive")
CRITICS = ("devils_advocate", "premortem", "adjacent_domain")

DEFAULT_SEVERITY: Severity = "medium"  # unknown label: neither inflate nor hide
DEFAULT_ACTIONABILITY: Actionability = "add_to_risks"  # unknown label: at least write it down
DEDUPE_THRESHOLD = 0.7
# FMEA risk priority (severity x probability x impact, 1..125) -> severity: the cubes of 4, 3 and 2.
DEFAULT_RPN_THRESHOLDS: Mapping[str, float] = {"critical": 64, "high": 27, "medium": 8}


def _key(value: Any) -> str:
    """Lower-case, NFKC, with every separator removed: "Revise-ADR" and "revise adr" -> "reviseadr"."""
    return re.sub(r"[\W_]+", "", normalize(str(value)))


_SEVERITY_ALIASES: dict[str, Severity] = {
    **{s: s for s in SEVERITIES},
    "crit": "critical",
    "blocker": "critical",
    "catastrophic": "critical",
    "severe": "critical",
    "致命的": "critical",
    "重大": "critical",
    "緊急": "critical",
    "major": "high",
    "important": "high",
    "高": "high",
    "高い": "high",
    "med": "medium",
    "moderate": "medium",
    "normal": "medium",
    "中": "medium",
    "中程度": "medium",
    "minor": "low",
    "trivial": "low",
    "info": "low",
    "informational": "low",
    "低": "low",
    "低い": "low",
}
_ACTIONABILITY_ALIASES: dict[str, Actionability] = {
    **{_key(a): a for a in ACTIONABILITIES},
    "blocker": "block",
    "blocking": "block",
    "reject": "block",
    "revise": "revise_adr",
    "reviseadr": "revise_adr",
    "amend": "revise_adr",
    "amendadr": "revise_adr",
    "updateadr": "revise_adr",
    "addtorisk": "add_to_risks",
    "addrisk": "add_to_risks",
    "addrisks": "add_to_risks",
    "document": "add_to_risks",
    "documentrisk": "add_to_risks",
    "watch": "monitor",
    "observe": "monitor",
    "track": "monitor",
}
_CATEGORY_ALIASES: dict[str, str] = {
    "technical": "technical",
    "technology": "technical",
    "tech": "technical",
    "技術": "technical",
    "技術的": "technical",
    "operational": "operational",
    "operations": "operational",
    "ops": "operational",
    "運用": "operational",
    "運用面": "operational",
    "businessregulatory": "business_regulatory",
    "businessandregulatory": "business_regulatory",
    "businessorregulatory": "business_regulatory",
    "business": "business_regulatory",
    "regulatory": "business_regulatory",
    "ビジネス規制": "business_regulatory",
    "ビジネス": "business_regulatory",
    "規制": "business_regulatory",
    "cognitive": "cognitive",
    "human": "cognitive",
    "humancognitive": "cognitive",
    "認知": "cognitive",
    "認知的": "cognitive",
}
_SOURCE_ALIASES: dict[str, str] = {
    "devilsadvocate": "devils_advocate",
    "devil": "devils_advocate",
    "da": "devils_advocate",
    "premortem": "premortem",
    "pm": "premortem",
    "adjacentdomain": "adjacent_domain",
    "adjacent": "adjacent_domain",
    "ad": "adjacent_domain",
}


def normalize_severity(value: Any) -> Severity:
    """A label or a 1-5 score -> one of critical/high/medium/low (unknown -> medium)."""
    if isinstance(value, bool):
        return DEFAULT_SEVERITY
    if isinstance(value, int | float):
        score = clamp_score(value)
        return "critical" if score >= 5 else "high" if score == 4 else "medium" if score == 3 else "low"
    return _SEVERITY_ALIASES.get(_key(value), DEFAULT_SEVERITY)


def normalize_actionability(value: Any) -> Actionability:
    return _ACTIONABILITY_ALIASES.get(_key(value), DEFAULT_ACTIONABILITY)


def normalize_category(value: Any) -> str | None:
    """A pre-mortem category label (English or Japanese, any separator) -> its id, or None if unknown."""
    if value is None:
        return None
    return _CATEGORY_ALIASES.get(_key(value))


def normalize_source(value: Any) -> str | None:
    """A critic name as a model might write it ("Devil's Advocate", "PM") -> its node name, or None."""
    return _SOURCE_ALIASES.get(_key(value))


def clamp_confidence(value: Any) -> float | None:
    """A 0-1 confidence; a percentage (1 < x <= 100) is read as one; unreadable -> None (un-scored,
    which the noise budget never holds back)."""
    if isinstance(value, bool):
        return None
    try:
        score = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if score != score:  # NaN
        return None
    if 1 < score <= 100:
        score /= 100
    return max(0.0, min(1.0, score))


def clamp_score(value: Any) -> int:
    """An FMEA factor: rounded into 1..5; anything unreadable counts as the middle, 3."""
    try:
        score = round(float(value))
    except (TypeError, ValueError, OverflowError):
        return 3
    return max(1, min(5, score))


def risk_priority(severity: Any, probability: Any, impact: Any) -> int:
    """FMEA risk priority number, recomputed from the clamped factors (the model's product is ignored)."""
    return clamp_score(severity) * clamp_score(probability) * clamp_score(impact)


def severity_from_rpn(rpn: int, thresholds: Mapping[str, float] | None = None) -> Severity:
    t = {**DEFAULT_RPN_THRESHOLDS, **(thresholds or {})}
    if rpn >= t["critical"]:
        return "critical"
    if rpn >= t["high"]:
        return "high"
    if rpn >= t["medium"]:
        return "medium"
    return "low"


def premortem_severity(
    severity: Any, probability: Any, impact: Any, thresholds: Mapping[str, float] | None = None
) -> Severity:
    """A scenario's severity from its risk priority, but a severity-5 (catastrophic) scenario is at least
    high whatever its probability: a rare 5x1x5 (RPN 25) must not sink into "medium"."""
    by_rpn = severity_from_rpn(risk_priority(severity, probability, impact), thresholds)
    if clamp_score(severity) >= 5 and severity_rank(by_rpn) > severity_rank("high"):
        return "high"
    return by_rpn


def coverage_gaps(categories: Iterable[str | None]) -> tuple[str, ...]:
    """The pre-mortem categories that no scenario covered, in canonical order."""
    seen = {normalize_category(c) for c in categories}
    return tuple(c for c in PREMORTEM_CATEGORIES if c not in seen)


def count_by_severity(findings: Iterable[Finding]) -> dict[str, int]:
    counts: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        counts[f.severity] += 1
    return counts


# --- similarity -----------------------------------------------------------------------------------

# Function words that make unrelated English titles look alike. In Japanese the function words are
# hiragana (particles, okurigana): a bigram with hiragana in it ("の増", "によ") links any two
# sentences, so content bigrams are the kanji / katakana ones.
_STOPWORDS = frozenset(
    """
    a an and are as at be by can could for from has have if in into is it its may might not of on or
    our over such that the their them then there these this those to under via was were when which while will with without would
    """.split()  # noqa: SIM905
)


_HIRAGANA = re.compile("[\u3040-\u309f]")


def content_tokens(text: str) -> frozenset[str]:
    """tokenize() without function words; text of nothing but function words keeps them all."""
    tokens = tokenize(text)
    content = frozenset(t for t in tokens if t not in _STOPWORDS and not _HIRAGANA.search(t))
    return content or frozenset(tokens)


def _coverage_tokens(text: str) -> frozenset[str]:
    tokens = tokenize(text)
    return frozenset(t for t in tokens if t not in _STOPWORDS) or frozenset(tokens)


def jaccard(a: str | frozenset[str], b: str | frozenset[str]) -> float:
    sa = content_tokens(a) if isinstance(a, str) else a
    sb = content_tokens(b) if isinstance(b, str) else b
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def severity_rank(s: Severity) -> int:
    return SEVERITIES.index(s)


def actionability_rank(a: Actionability) -> int:
    return ACTIONABILITIES.index(a)


def _merge(keep: Finding, other: Finding) -> Finding:
    """Two findings about the same thing: the higher severity's text wins, sources are united."""
    if severity_rank(other.severity) < severity_rank(keep.severity):
        keep, other = other, keep
    sources = tuple(dict.fromkeys(keep.source + other.source))
    actionability = min(keep.actionability, other.actionability, key=actionability_rank)
    confidences = [c for c in (keep.confidence, other.confidence) if c is not None]
    return replace(
        keep,
        source=sources,
        actionability=actionability,
        confidence=max(confidences) if confidences else None,
        dedupe_group=keep.dedupe_group or other.dedupe_group,
        category=keep.category or other.category,
        perspective=keep.perspective or other.perspective,
    )


def dedupe_findings(
    findings: Sequence[Finding], threshold: float = DEDUPE_THRESHOLD
) -> tuple[tuple[Finding, ...], int]:
    """Merge findings with the same non-empty `dedupe_group` (the critics' topic key, compared
    normalised) or whose titles share >= threshold of their tokens (Jaccard; CJK as bigrams).

    Single-link and order-stable: a finding joins the first group holding any member that similar.
    Returns the merged findings in first-seen order and how many were merged away.
    """
    groups: list[list[frozenset[str]]] = []
    topics: list[set[str]] = []
    merged: list[Finding] = []
    for f in findings:
        tokens = content_tokens(f.title)
        topic = _key(f.dedupe_group)
        for i, members in enumerate(groups):
            if (topic and topic in topics[i]) or any(jaccard(tokens, m) >= threshold for m in members):
                members.append(tokens)
                if topic:
                    topics[i].add(topic)
                merged[i] = _merge(merged[i], f)
                break
        else:
            groups.append([tokens])
            topics.append({topic} if topic else set())
            merged.append(f)
    return tuple(merged), len(findings) - len(merged)


# --- the ADR's own risks and alternatives ---------------------------------------------------------

# Inside one passage: a plain-text bullet ("• a • b" in a seed's paragraph) or a sentence end.
_ITEM_SPLIT = re.compile(r"\s+(?=[•・●]\s)|(?<=[。．！？])|(?<=[.!?])\s+(?=[A-Z0-9])")
COVERAGE_JACCARD = 0.7
COVERAGE_CONTAINMENT = 0.8
COVERAGE_MIN_TOKENS = 3
COVERAGE_CONTAINMENT_ALL = 0.6  # containment counting function-word bigrams too


def own_risk_items(
    sections: Mapping[str, str], names: Sequence[str], *, markdown: bool = True
) -> tuple[str, ...]:
    """The ADR's own risk / alternative statements: the sentences of those sections' passages (each
    list item, paragraph or cell as a reader sees it), so each is a verbatim slice of one passage."""
    items: list[str] = []
    for name in names:
        for passage in reader_passages(sections.get(name) or "", markdown=markdown):
            if passage.kind == "heading":
                continue
            for piece in _ITEM_SPLIT.split(passage.text):
                piece = piece.strip().lstrip("•・●").strip()
                if piece:
                    items.append(piece)
    return tuple(items)


def covered_by(finding: Finding, items: Sequence[str]) -> str | None:
    """The ADR statement that best covers what this finding says, or None.

    A statement covers a finding when their content tokens are near-duplicates (Jaccard >= 0.7), or
    when a title of at least 3 content tokens is >= 80% contained in the statement (titles are short,
    risk bullets long, so plain Jaccard would rarely fire). The best-scoring statement is returned.
    """
    title = content_tokens(finding.title)
    if not title:
        return None
    # Containment keeps the hiragana bigrams: in Japanese they carry negation and manner
    # ("黙って続く", "silently continues"), which is exactly what a new finding adds to a listed risk.
    title_all = _coverage_tokens(finding.title)
    best: tuple[float, str] | None = None
    for item in items:
        tokens = content_tokens(item)
        if not tokens:
            continue
        score = jaccard(title, tokens)
        contained = len(title & tokens) / len(title)
        if len(title_all & _coverage_tokens(item)) / len(title_all) < COVERAGE_CONTAINMENT_ALL:
            contained = 0.0
        if score >= COVERAGE_JACCARD or (
            len(title) >= COVERAGE_MIN_TOKENS and contained >= COVERAGE_CONTAINMENT
        ):
            key = max(score, contained)
            if best is None or key > best[0]:
                best = (key, item)
    return best[1] if best else None


def exclude_covered(
    findings: Sequence[Finding], items: Sequence[str]
) -> tuple[tuple[Finding, ...], tuple[tuple[Finding, str], ...]]:
    """Split findings into (kept, dropped-with-the-covering-statement)."""
    kept: list[Finding] = []
    dropped: list[tuple[Finding, str]] = []
    for f in findings:
        item = covered_by(f, items)
        if item is None:
            kept.append(f)
        else:
            dropped.append((f, item))
    return tuple(kept), tuple(dropped)
