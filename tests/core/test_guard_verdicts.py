"""The guard's model check, verified in the core: which answers are shown, which are listed apart, and why."""

from __future__ import annotations

from typing import Any

import pytest

from adr_review.core.adr import parse_adr
from adr_review.core.diff import parse_diff
from adr_review.core.feedback import Ledger
from adr_review.core.guard import build_query
from adr_review.core.guard_check import GuardVerdict, answer_id, arrange, diff_excerpt, verify_answer
from adr_review.core.results import Usage
from adr_review.pipeline.code_guard.guard_check import GuardCheckResult
from tests.entrypoints.test_guard_cli import MONGO

ADR = parse_adr(
    "0001-postgres.md",
    (
        b"# ADR-0001: PostgreSQL as the primary data store\n\n## Status\n\nAccepted\n\n## Context\n\n"
        b"Orders and payments need multi-row transactions and foreign keys.\n\n## Decision\n\n"
        b"Every service keeps its data in its own PostgreSQL database on Amazon RDS. "
        b"We will not adopt MongoDB or another document database for orders, payments or carts.\n\n"
        b"## Consequences\n\n* Connection pooling goes through PgBouncer in transaction mode.\n"
    ),
)
LINES = build_query(parse_diff(MONGO)).lines
DECISION = "We will not adopt MongoDB or another document database for orders, payments or carts."
ADDED = "from pymongo import MongoClient"


def answer(verdict: str = "conflicts", adr_quote: str = DECISION, diff_quote: str = ADDED) -> dict[str, Any]:
    return {"verdict": verdict, "adr_quote": adr_quote, "diff_quote": diff_quote,
            "reason": "It adds MongoDB.", "confidence": 0.9}  # fmt: skip


@pytest.mark.parametrize(
    ("given", "unverified"),
    [
        (answer(), None),
        (answer(adr_quote=f"“{DECISION}”"), None),  # wrapping quote marks are forgiven
        (answer(adr_quote="- Connection pooling goes through PgBouncer in transaction mode."), None),
        (answer(diff_quote=f"+{ADDED}"), None),  # the diff mark the model copied is forgiven
        (answer(diff_quote="psycopg  # the order service's PostgreSQL database"), None),  # a removed line
        (answer(adr_quote="Orders and payments need multi-row transactions and foreign keys."),
         "adr_quote_outside_decision"),  # verbatim, but in the Context
        (answer(adr_quote="PostgreSQL as the primary data store"), "adr_quote_outside_decision"),  # the title
        (answer(adr_quote="We will never use MongoDB for orders."), "adr_quote_not_found"),  # a paraphrase
        (answer(adr_quote=""), "no_adr_quote"),
        (answer(adr_quote="MongoDB"), "adr_quote_too_short"),
        (answer(diff_quote="pass"), "diff_quote_not_changed"),  # an unchanged context line
        (answer(diff_quote="import pymongo"), "diff_quote_not_changed"),  # not in any line as written
        (answer(diff_quote=""), "no_diff_quote"),
        (answer(diff_quote="+ )"), "diff_quote_not_changed"),  # too short to show anything
        (answer("consistent", adr_quote="Orders and payments need multi-row transactions and foreign keys."),
         "adr_quote_outside_decision"),
        (answer("unclear", adr_quote="", diff_quote=""), None),  # "not covered" may quote nothing
        (answer("unclear", adr_quote="", diff_quote=ADDED), None),
        (answer("unclear", adr_quote="A sentence the ADR does not have at all.", diff_quote=""),
         "adr_quote_not_found"),  # a quote it does give must verify
    ],
)  # fmt: skip
def test_an_answer_is_shown_only_when_its_quotes_verify(
    given: dict[str, Any], unverified: str | None
) -> None:
    v = verify_answer(ADR, given, LINES)
    assert v.unverified == unverified
    assert v.shown_as_conflict == (unverified is None and given["verdict"] == "conflicts")
    if unverified is None and given["adr_quote"]:
        assert v.section in ("decision", "consequences") and v.adr_quote
    if unverified is None and given["diff_quote"]:
        assert v.diff_line is not None and v.diff_line.change in ("added", "removed")
    if unverified is not None:
        assert v.adr_quote == "" and v.diff_line is None
        assert v.claimed_adr_quote == given["adr_quote"]


def _v(path: str, verdict: str, unverified: str | None = None) -> GuardVerdict:
    return GuardVerdict(path, verdict, "r", 0.5, unverified=unverified)  # type: ignore[arg-type]


def test_at_most_three_are_shown_conflicts_first_and_unverified_apart() -> None:
    given = [
        _v("a", "consistent"),
        _v("b", "unclear"),
        _v("c", "conflicts", "adr_quote_outside_decision"),
        _v("d", "conflicts"),
        _v("e", "consistent"),
        _v("f", "conflicts"),
    ]
    shown, apart = arrange(given)
    assert [v.path for v in shown] == ["d", "f", "b"]
    assert [v.path for v in apart] == ["c"]
    assert all(not v.shown_as_conflict for v in apart)


def test_the_diff_excerpt_puts_the_matched_lines_first_and_says_what_it_cut() -> None:
    many = "".join(f"+line number {i} of a long change\n" for i in range(400))
    lines = build_query(parse_diff(f"--- a/x.py\n+++ b/x.py\n@@ -0,0 +1,400 @@\n{many}")).lines
    text, cut = diff_excerpt(lines, budget=1_000)
    assert cut > 0 and text.endswith(f"[... {cut} more changed lines not shown]")
    assert len(text) < 1_100 and text.startswith("### x.py\n+ line number 0 ")
    assert diff_excerpt(lines, budget=10**6)[1] == 0


# The answer's id: what its Adopted box, its tick and `/adr-review dismiss` go by

OTHER_WORDS = answer(
    adr_quote="Every service keeps its data in its own PostgreSQL database on Amazon RDS.",
    diff_quote="psycopg  # the order service's PostgreSQL database",
)


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        (answer(), OTHER_WORDS, True),  # the same verdict on the same ADR, quoting other sentences
        (answer(), {**answer(), "reason": "Other words.", "confidence": 0.5}, True),
        (answer(), answer("consistent"), False),  # another verdict is another answer
    ],
)
def test_an_answers_id_is_the_adr_and_the_verdict(
    first: dict[str, Any], second: dict[str, Any], same: bool
) -> None:
    a, b = (verify_answer(ADR, x, LINES) for x in (first, second))
    assert a.unverified is None and b.unverified is None
    assert (answer_id(a) == answer_id(b)) is same


def test_the_ledger_lists_the_shown_answers_under_the_ids_their_boxes_carry() -> None:
    from adr_review.core.feedback import GUARD_PERSPECTIVE, read_ledger, revision, with_ledger
    from adr_review.core.feedback_boxes import read_ticks
    from adr_review.core.guard import Implicated
    from adr_review.core.guard_view import answers_shown
    from adr_review.core.render import render_guard

    v = verify_answer(ADR, answer(), LINES)
    check = GuardCheckResult((v,), (), (), Usage())
    decision = Implicated(ADR, 0.9, DECISION, "decision", ())
    body = render_guard([decision], (), 0.36, check=check)
    shown = answers_shown([decision], check)
    assert [(s.id, s.severity, s.perspective, s.title) for s in shown] == [
        (answer_id(v), "conflicts", GUARD_PERSPECTIVE, "ADR-0001: PostgreSQL as the primary data store")
    ]
    assert read_ticks(body) == {answer_id(v): False}
    ledger = read_ledger(
        with_ledger(body, Ledger().add(revision("ab" * 32, shown, 0.0, "k", read_ticks(body))))
    )
    assert ledger is not None and ledger.shown() == {s.id: s for s in shown}  # read back as written
