"""The guard's model check, verified: what the model may claim about one implicated ADR. Pure.

The model answers, per implicated ADR, `{verdict: conflicts | consistent | unclear, adr_quote,
diff_quote, reason, confidence}` (prompts/guard-check). Code believes only what it can check:

- `adr_quote` must be one passage of the ADR's **Decision or Consequences** section as a reader sees it
  (the quote rules of every finding and citation, app/adr_review/core/citations.py check_quote:
  NFKC + whitespace folding, a list marker or wrapping quote marks forgiven, substance required). A
  sentence of the Context states a problem, not a decision: it cannot show that a change breaks one.
- `diff_quote` must lie inside one added or removed line of the diff (a leading `+` / `-` mark the model
  copied is forgiven).

A `conflicts` or `consistent` answer whose two quotes both verify is shown with them; any other is
listed apart as unverified, with why, and never shown as a conflict. An `unclear` answer ("the ADR
does not decide what this change does") may quote nothing; a quote it does give must verify too. At
most MAX_SHOWN are shown, conflicts first. `diff_excerpt` is the change as the prompt shows it, budgeted
and saying what it cut.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from adr_review.core.adr import Adr
from adr_review.core.citations import EMPTY_REASON, TOO_SHORT, check_quote
from adr_review.core.finding_checks import quote_in_sections
from adr_review.core.guard import MAX_SHOWN, Evidence, QueryLine
from adr_review.core.passages import passages_of
from adr_review.core.text import contains_verbatim, fold_whitespace

Verdict = Literal["conflicts", "consistent", "unclear"]
VERDICTS: tuple[Verdict, ...] = ("conflicts", "consistent", "unclear")
DECISION_SECTIONS = ("decision", "consequences")  # where a quote can show what the ADR decided
MIN_DIFF_QUOTE = 4  # characters (spaces aside): `)`, `}` or `x = 1` fragments show nothing

Unverified = Literal[
    "no_adr_quote",
    "adr_quote_too_short",
    "adr_quote_not_found",
    "adr_quote_outside_decision",
    "no_diff_quote",
    "diff_quote_not_changed",
]


@dataclass(frozen=True)
class GuardVerdict:
    """One model answer about one ADR, after the checks. `unverified` is None when it may be shown."""

    path: str  # the ADR's path (the implicated decision it answers for)
    verdict: Verdict
    reason: str  # the model's words: untrusted, never checked
    confidence: float
    adr_quote: str = ""  # as verified ("" when it was not given or did not verify)
    section: str = ""  # the canonical section the ADR quote stands in: decision | consequences
    diff_quote: str = ""
    diff_line: QueryLine | None = None  # the changed line the diff quote lies in
    unverified: Unverified | None = None
    claimed_adr_quote: str = ""  # what the model quoted, as it wrote it (shown apart when unverified)
    claimed_diff_quote: str = ""

    @property
    def shown_as_conflict(self) -> bool:
        return self.unverified is None and self.verdict == "conflicts"


def _adr_problem(quote: str, adr: Adr) -> tuple[Unverified | None, str, str]:
    """(problem, verified quote, section) for an ADR quote."""
    if not quote.strip():
        return "no_adr_quote", "", ""
    found = quote_in_sections(quote, adr, DECISION_SECTIONS)
    if found is not None:
        return None, found[1].quote, found[0]
    anywhere = check_quote(quote, passages_of(adr))
    if anywhere.problem in (EMPTY_REASON, TOO_SHORT):
        return "adr_quote_too_short", "", ""
    return ("adr_quote_outside_decision" if anywhere.ok else "adr_quote_not_found"), "", ""


def changed_line(quote: str, lines: Sequence[QueryLine]) -> QueryLine | None:
    """The first added or removed line that has `quote` inside it (after NFKC + whitespace folding),
    tried as written, then without a leading `+` / `-` diff mark or wrapping backticks."""
    text = quote.strip()
    variants = dict.fromkeys([text, text.strip("`").strip(), text[1:].strip() if text[:1] in "+-" else text])
    for v in variants:
        if len("".join(v.split())) < MIN_DIFF_QUOTE:
            continue
        hit = next((q for q in lines if contains_verbatim(q.line.text, v)), None)
        if hit is not None:
            return hit
    return None


def verify_answer(adr: Adr, answer: dict[str, Any], lines: Sequence[QueryLine]) -> GuardVerdict:
    """The model's answer (already schema-valid) about `adr`, checked against the ADR and the diff's
    added and removed lines (the module doc's rules)."""
    verdict: Verdict = answer["verdict"]
    adr_quote = str(answer.get("adr_quote") or "")
    diff_quote = str(answer.get("diff_quote") or "")
    base = GuardVerdict(
        adr.path,
        verdict,
        fold_whitespace(str(answer.get("reason") or "")),
        float(answer.get("confidence") or 0.0),
        claimed_adr_quote=adr_quote,
        claimed_diff_quote=diff_quote,
    )
    if verdict == "unclear" and not adr_quote.strip() and not diff_quote.strip():
        return base
    problem, quote, section = _adr_problem(adr_quote, adr)
    if problem is not None and not (verdict == "unclear" and problem == "no_adr_quote"):
        return _unverified(base, problem)
    line = changed_line(diff_quote, lines) if diff_quote.strip() else None
    if line is None and (verdict != "unclear" or diff_quote.strip()):
        return _unverified(base, "no_diff_quote" if not diff_quote.strip() else "diff_quote_not_changed")
    return replace(base, adr_quote=quote, section=section, diff_quote=diff_quote.strip(), diff_line=line)


def _unverified(v: GuardVerdict, why: Unverified) -> GuardVerdict:
    return replace(v, unverified=why)


_ORDER = {"conflicts": 0, "unclear": 1, "consistent": 2}


def arrange(
    verdicts: Sequence[GuardVerdict], limit: int = MAX_SHOWN
) -> tuple[tuple[GuardVerdict, ...], tuple[GuardVerdict, ...]]:
    """(shown: the verified answers, conflicts first, then unclear, then consistent, each group in
    the order given, at most `limit`; unverified: the rest of the answers, in the order given)."""
    verified = sorted((v for v in verdicts if v.unverified is None), key=lambda v: _ORDER[v.verdict])
    return tuple(verified[:limit]), tuple(v for v in verdicts if v.unverified is not None)


DIFF_BUDGET = 6_000  # characters of changed lines shown to the model per ADR
ADR_SECTION_BUDGET = 4_000  # characters of each of the ADR's Decision and Consequences


def clip(text: str, budget: int) -> str:
    """`text` cut at `budget` characters, saying how much was cut (never a silent truncation)."""
    if len(text) <= budget:
        return text
    return f"{text[:budget]}\n[... {len(text) - budget} more characters not shown]"


def diff_excerpt(
    lines: Sequence[QueryLine], first: Sequence[Evidence] = (), budget: int = DIFF_BUDGET
) -> tuple[str, int]:
    """The changed lines as the prompt shows them (`### path` then `+ text` / `- text`), the lines in
    `first` (the ones that matched the ADR) ahead of the rest, within `budget` characters; and how
    many changed lines the budget left out."""
    key = {(e.path, e.change, e.number) for e in first}
    ordered = [q for q in lines if (q.path, q.change, q.line.number) in key]
    ordered += [q for q in lines if (q.path, q.change, q.line.number) not in key]
    by_path: dict[str, list[str]] = {}
    spent = left_out = 0
    for q in ordered:
        row = f"{'+' if q.change == 'added' else '-'} {q.line.text}"
        if spent + len(row) + 1 > budget:
            left_out += 1
            continue
        spent += len(row) + 1
        by_path.setdefault(q.path, []).append(row)
    text = "\n\n".join(f"### {path}\n" + "\n".join(rows) for path, rows in by_path.items())
    if left_out:
        text += f"\n\n[... {left_out} more changed lines not shown]"
    return text, left_out


def answer_id(v: GuardVerdict) -> str:
    """The 8 hex digits of a shown answer's Adopted box (app/adr_review/core/feedback_boxes.py checkbox), what
    `/adr-review dismiss` takes: from the ADR's path and the verdict only, so a re-run that gives the
    same verdict on the same ADR (in other words, or quoting another line) keeps the id, its tick and
    its dismissal; another verdict is another answer."""
    return hashlib.sha256("\0".join(("guard", v.path, v.verdict)).encode()).hexdigest()[:8]
