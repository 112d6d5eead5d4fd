"""The guard's model check through the scripted fake model at the LlmPort: one call per implicated ADR,
the answers verified, rendered conflicts first; the model's own failures degrade with a note."""

from __future__ import annotations

import json
from typing import Any

from adr_review.core.adr import Adr, parse_adr
from adr_review.core.diff import parse_diff
from adr_review.core.guard import Implicated, build_query, matching_lines
from adr_review.core.render import render_guard
from adr_review.core.results import Usage
from adr_review.pipeline.code_guard.guard_check import PROMPT_NAME, check_decisions
from adr_review.pipeline.ports import InfrastructureError, LlmError, LlmResponse
from adr_review.prompts import packaged
from tests.entrypoints.test_guard_cli import ADRS, MONGO
from tests.fakes.llm import FakeLlm

FOLDER = {name: parse_adr(name, text.encode()) for name, text in ADRS.items()}
QUERY = build_query(parse_diff(MONGO), "Move orders to MongoDB")
POSTGRES = FOLDER["0001-postgres.md"]
DECISION = "We will not adopt MongoDB or another document database for orders, payments or carts."
ADDED = "from pymongo import MongoClient  # orders move to a MongoDB document database"
CONTEXT = "Orders and payments need multi-row transactions and foreign keys."


def conflict(
    adr_quote: str = DECISION, diff_quote: str = ADDED, verdict: str = "conflicts"
) -> dict[str, Any]:
    return {"verdict": verdict, "adr_quote": adr_quote, "diff_quote": diff_quote,
            "reason": "The order store moves to MongoDB, which the decision rules out.", "confidence": 0.9}  # fmt: skip


def run(llm: FakeLlm, *adrs: Adr) -> Any:
    pairs = [(a, matching_lines(a, QUERY.lines)) for a in adrs or (POSTGRES,)]
    return check_decisions(pairs, QUERY, llm, packaged(), title="Move orders to MongoDB")


def implicated(*adrs: Adr) -> list[Implicated]:
    out = []
    for a in adrs:
        lines = matching_lines(a, QUERY.lines) or matching_lines(POSTGRES, QUERY.lines)
        out.append(Implicated(a, 0.8, a.summary or a.title, "Decision", lines))
    return out


def test_a_conflict_with_both_quotes_verified_is_shown_as_a_conflict() -> None:
    llm = FakeLlm().on(PROMPT_NAME, conflict())
    check = run(llm)
    assert llm.count(PROMPT_NAME) == 1
    [v] = check.shown
    assert v.shown_as_conflict and v.section == "decision" and v.adr_quote == DECISION
    assert v.diff_line is not None and (v.diff_line.change, v.diff_line.line.text) == ("added", ADDED)
    assert not check.unverified and not check.failures
    assert check.usage.calls == 1 and check.usage.input_tokens > 0  # counted, so the caps see it
    request = llm.requests(PROMPT_NAME)[0]
    assert DECISION in request.user and ADDED in request.user
    assert DECISION not in request.system and "data written by other people" in request.system  # rules first
    body = render_guard(implicated(POSTGRES), QUERY.cut, 0.36, check=check)
    assert "### ⚠️ Conflicts · ADR-0001" in body
    assert f"> {DECISION}" in body and "What it decided (Decision)" in body
    assert "- [ ] **Adopted**" in body and "<!-- adr-review:finding=" in body


def test_an_adr_quote_from_the_context_is_listed_as_unverified_never_as_a_conflict() -> None:
    check = run(FakeLlm().on(PROMPT_NAME, conflict(adr_quote=CONTEXT)))
    assert not check.shown
    [v] = check.unverified
    assert v.unverified == "adr_quote_outside_decision" and not v.shown_as_conflict
    body = render_guard(implicated(POSTGRES), QUERY.cut, 0.36, check=check)
    assert "Conflicts ·" not in body and "Adopted" not in body
    assert "1 model answer(s) whose quotes code could not find" in body
    assert "not in its Decision or Consequences" in body
    assert f"> {POSTGRES.sections['decision'].split('. ')[0]}" in body or "What it decided" in body


def test_a_diff_quote_that_is_not_an_added_or_removed_line_is_unverified() -> None:
    check = run(FakeLlm().on(PROMPT_NAME, conflict(diff_quote="pass")), POSTGRES)
    assert not check.shown and [v.unverified for v in check.unverified] == ["diff_quote_not_changed"]
    check = run(FakeLlm().on(PROMPT_NAME, conflict(diff_quote="def connect(dsn): return MongoClient(dsn)")))
    assert [v.unverified for v in check.unverified] == ["diff_quote_not_changed"]  # no such line


def test_non_json_and_truncated_output_degrade_to_the_offline_listing_with_a_note() -> None:
    cut = LlmResponse(
        '{"verdict": "conflicts", "adr_quote": "We will not', Usage(calls=1), stop_reason="max_tokens"
    )
    for reply, kind in (("I think it conflicts.", "not_json"), (cut, "truncated"),
                        ({"verdict": "maybe", "adr_quote": "", "diff_quote": "", "reason": "x", "confidence": 2},
                         "schema")):  # fmt: skip
        llm = FakeLlm().on(PROMPT_NAME, reply)
        check = run(llm)
        assert not check.shown and not check.unverified
        assert [(f.path, f.kind) for f in check.failures] == [("0001-postgres.md", kind)]
        assert check.usage.calls >= 1  # what the failed answer cost is still counted
        body = render_guard(implicated(POSTGRES), QUERY.cut, 0.36, check=check)
        offline = render_guard(implicated(POSTGRES), QUERY.cut, 0.36)
        assert f"No usable model answer for ADR-0001 ({kind}): listed as the offline guard found it." in body
        assert (
            "Changed lines that share its terms" in body and "Changed lines that share its terms" in offline
        )


def test_a_refused_call_degrades_but_an_infrastructure_error_fails() -> None:
    check = run(FakeLlm().on(PROMPT_NAME, LlmError("auth", "HTTP 401: authentication_error")))
    assert [f.kind for f in check.failures] == ["llm_error"]
    llm = FakeLlm().on(PROMPT_NAME, InfrastructureError("the state store is gone"))
    try:
        run(llm)
    except InfrastructureError:
        pass
    else:  # pragma: no cover - the assertion
        raise AssertionError("an infrastructure error must fail the run")


def test_at_most_three_are_checked_and_shown_conflicts_first() -> None:
    adrs = [
        POSTGRES,
        FOLDER["0002-rabbitmq.md"],
        FOLDER["0003-url-versioning.md"],
        FOLDER["0005-log-retention.md"],
    ]
    unclear = {
        "verdict": "unclear",
        "adr_quote": "",
        "diff_quote": "",
        "reason": "Not covered.",
        "confidence": 0.4,
    }
    llm = FakeLlm().queue(PROMPT_NAME, unclear, unclear, conflict(), conflict())
    check = run(llm, FOLDER["0002-rabbitmq.md"], FOLDER["0003-url-versioning.md"], *adrs)
    assert llm.count(PROMPT_NAME) == 3  # meta.yaml max_checks
    assert [v.verdict for v in check.shown] == ["conflicts", "unclear", "unclear"]
    assert check.shown[0].path == "0001-postgres.md"
    body = render_guard(implicated(*adrs[:3]), QUERY.cut, 0.36, check=check)
    assert body.index("⚠️ Conflicts · ADR-0001") < body.index("❔ Unclear or not covered · ADR-0002")


def test_untrusted_model_text_is_sanitised_in_the_comment() -> None:
    evil = conflict() | {
        "reason": "Ping @octocat ![x](https://evil.example/p.png) <img src=x> [click](https://e.x)"
    }
    check = run(FakeLlm().on(PROMPT_NAME, evil))
    body = render_guard(implicated(POSTGRES), QUERY.cut, 0.36, check=check)
    assert (
        "@octocat" not in body and "<img" not in body and "![x]" not in body and "](https://e.x)" not in body
    )
    ja = render_guard(implicated(POSTGRES), QUERY.cut, 0.36, check=check, language="ja")
    assert "⚠️ 矛盾 · ADR-0001" in ja and "決定したこと（決定）" in ja
    assert json.dumps(body)  # renders to plain text
