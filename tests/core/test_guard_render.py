"""The guard's comment: what it shows, one line when silent, and untrusted text sanitised."""

from __future__ import annotations

import re

from adr_review.core.adr import parse_adr
from adr_review.core.guard import Evidence, Implicated
from adr_review.core.render import render_guard

HOSTILE = parse_adr(
    "0009-x.md",
    b"# ADR-0009: @octocat <img src=x> PostgreSQL\n\n## Status\n\nAccepted\n\n## Decision\n\n"
    b"We keep orders in PostgreSQL, ping @acme/team and see #12.\n",
)


def _item() -> Implicated:
    line = Evidence("svc/a.py", "added", 7, "db = MongoClient()  # @octocat `x` <script>", ("mongoclient",))
    return Implicated(
        HOSTILE, 0.8123, "We keep orders in PostgreSQL, ping @acme/team and see #12.", "Decision", (line,)
    )


def test_silent_is_one_line() -> None:
    assert render_guard([], [], 0.4) == "adr-review guard: no decision implicated\n"


def test_comment_lists_the_decision_and_its_lines() -> None:
    body = render_guard([_item()], ["diff: 3 of 9 changed lines past the 12000-character budget"], 0.4)
    assert "ADR-0009" in body and "evidence 0.81" in body and "line 7" in body
    assert "Budget: diff: 3 of 9 changed lines" in body
    assert "at or above 0.400" in body


def test_untrusted_text_is_sanitised() -> None:
    body = render_guard([_item()], [], 0.4)
    prose = re.sub(r"``.*?``|`[^`\n]*`", "", body)  # GitHub links nothing inside a code span
    assert "@octocat" not in prose and "@acme" not in prose and "#12" not in prose
    assert "@&#8203;octocat" in prose and "#&#8203;12" in prose
    assert "<script>" not in prose and "<img" not in body
    assert "``db = MongoClient() # @octocat `x` <script>``" in body  # the line, verbatim in one code span
