"""Finding ids, the Adopted boxes and the comment's ledger (app/adr_review/core/feedback.py): table-driven for the
rules, property-based for what reads untrusted comment bodies."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adr_review.core.commands import parse_command
from adr_review.core.feedback import (
    Ledger,
    Revision,
    Shown,
    ledger_line,
    next_ledger,
    read_ledger,
    with_ledger,
)
from adr_review.core.feedback_boxes import (
    carry_ticks,
    checkbox,
    finding_id,
    finding_ids,
    read_ticks,
    tick_changes,
)
from adr_review.core.results import Finding
from adr_review.core.triggers import Actor, CommentEvent, decide

F = Finding(("devils_advocate",), "No cost ceiling", "high", "revise_adr", "We call a model", "Decision",
            "No cap.", "Add a cap.", "cost-ceiling")  # fmt: skip
A, B = "aaaa0001", "bbbb0002"


def test_ids_are_stable_per_adr_and_topic_and_distinct_when_shown_together() -> None:
    assert finding_id("a.md", F) == finding_id("a.md", dataclasses.replace(F, title="Reworded", gap="x"))
    assert finding_id("a.md", F) != finding_id("b.md", F)
    assert finding_id("a.md", F) != finding_id("a.md", dataclasses.replace(F, quote="Another passage"))
    twins = finding_ids("a.md", [F, F, F])
    assert len(set(twins)) == 3 and twins[0] == finding_id("a.md", F)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (checkbox(A, "**Adopted**"), {A: False}),
        (checkbox(A, "x").replace("[ ]", "[x]"), {A: True}),
        (checkbox(A, "x").replace("[ ]", "[X]"), {A: True}),
        ("  " + checkbox(A, "x").replace("- [ ]", "* [x]"), {A: True}),  # indented, other bullet
        (checkbox(A, "x").replace(A, "AAAA0001"), {}),  # not our id shape
        (checkbox(A, "x").replace("[ ]", "[?]"), {}),
        ("> " + checkbox(A, "x"), {}),  # quoted by somebody: not a box of ours
        (f"- [x] text <!-- adr-review:finding={A} --> trailing", {}),
        ("- [x] plain task", {}),
    ],
)
def test_read_ticks_reads_only_our_box_lines(line: str, expected: dict[str, bool]) -> None:
    assert read_ticks(f"intro\n\n{line}\n\nmore") == expected


def test_tick_changes_and_carry_ticks() -> None:
    before = "\n".join([checkbox(A, "x"), checkbox(B, "x")])
    after = before.replace(f"[ ] x <!-- adr-review:finding={A}", f"[x] x <!-- adr-review:finding={A}")
    assert tick_changes(before, after) == {A: True}
    assert tick_changes(after, before) == {A: False}
    assert tick_changes(before, checkbox(A, "x")) == {}  # a box removed is not a tick
    assert read_ticks(carry_ticks(before, {A, "ffff0000"})) == {A: True, B: False}
    assert carry_ticks(before, ()) == before


def _rev(digest: str, ids: tuple[str, ...], cost: float, run: str) -> Revision:
    return Revision(digest * 16, tuple(Shown(i, "high", "privacy", "t <b>&") for i in ids), cost, (run * 12,))


@pytest.mark.parametrize(
    ("revs", "revised", "cost"),
    [
        ([], False, 0.0),
        ([_rev("1", (A,), 0.5, "a")], False, 0.5),
        ([_rev("1", (A,), 0.5, "a"), _rev("1", (A,), 0.5, "a")], False, 0.5),  # the same run again
        ([_rev("1", (A,), 0.5, "a"), _rev("1", (A, B), 0.25, "b")], False, 0.75),  # a re-run: same content
        ([_rev("1", (), 0.5, "a"), _rev("2", (A,), 0.25, "b")], False, 0.75),  # changed before any finding
        ([_rev("1", (A,), 0.5, "a"), _rev("2", (), 0.25, "b")], True, 0.75),
    ],
)
def test_the_ledger_counts_revisions_after_findings_and_each_run_once(
    revs: list[Revision], revised: bool, cost: float
) -> None:
    ledger = Ledger()
    for r in revs:
        ledger = ledger.add(r)
    assert ledger.revised is revised and ledger.cost_usd == pytest.approx(cost)
    assert read_ledger(with_ledger("body", ledger)) == (ledger if revs else Ledger())


def test_the_ledger_keeps_the_first_and_latest_revisions_and_counts_the_rest() -> None:
    ledger = Ledger()
    for i in range(20):
        ledger = ledger.add(_rev(f"{i:x}", (A,), 0.1, f"{i:x}"))
    assert len(ledger.revisions) == 12 and ledger.dropped == 8 and ledger.revised
    assert ledger.revisions[0].digest == "0" * 16


def test_the_ledger_line_cannot_close_the_html_comment() -> None:
    ledger = Ledger((Revision("1" * 16, (Shown(A, "high", "privacy", "--> <img src=x> &"),), 0.0, ()),))
    line = ledger_line(ledger)
    assert line.count("-->") == 1 and "<img" not in line
    assert read_ledger("x\n\n" + line)  # and it reads back


@settings(max_examples=200, database=None)
@given(st.text())
def test_reading_any_body_never_raises(body: str) -> None:
    read_ticks(body)
    read_ledger(body)
    read_ledger("x\n<!-- adr-review:ledger v1 " + body + " -->")
    carry_ticks(body, {A})
    parse_command("/adr-review dismiss " + body)


@settings(max_examples=100, database=None)
@given(
    st.lists(st.sampled_from([A, B, "cccc0003"]), unique=True), st.text(alphabet="ab -[]x\n", max_size=200)
)
def test_carry_ticks_touches_only_our_boxes(ticked: list[str], noise: str) -> None:
    body = "\n".join([noise, checkbox(A, "x"), noise, checkbox(B, "y"), noise])
    out = carry_ticks(body, ticked)
    assert {k for k, v in read_ticks(out).items() if v} == {k for k in (A, B) if k in ticked} | {
        k for k, v in read_ticks(body).items() if v
    }


@pytest.mark.parametrize(
    ("body", "fid", "reason"),
    [
        ("/adr-review dismiss aaaa0001", A, ""),
        ("/adr-review dismiss `AAAA0001` we accept it", A, "we accept it"),
        ("/adr-review dismiss aaaa0001 first line\nsecond line", A, "first line\nsecond line"),
        ("/adr-review dismiss", None, ""),
        ("/adr-review dismiss not-an-id why", None, "why"),
    ],
)
def test_the_dismiss_command(body: str, fid: str | None, reason: str) -> None:
    command = parse_command(body)
    assert command is not None and command.kind == "dismiss"
    assert (command.finding_id, command.reason) == (fid, reason)


def _edit(before: str, after: str, sender: str = "alice") -> CommentEvent:
    return CommentEvent(
        "edited", "acme/shop", 7, True, 99, after, "NONE", Actor(sender, "User"), "main", before
    )


MARKED = "<!-- adr-review:v1 path=docs/adr/1.md key=k1 -->\n"
BOXES = MARKED + checkbox(A, "x")


@pytest.mark.parametrize(
    ("event", "permission", "kind", "ticks"),
    [
        (_edit(BOXES, BOXES.replace("[ ]", "[x]")), None, "feedback", ()),  # who edited? look it up
        (_edit(BOXES, BOXES.replace("[ ]", "[x]")), "write", "feedback", ((A, True),)),
        (_edit(BOXES, BOXES.replace("[ ]", "[x]")), "admin", "feedback", ((A, True),)),
        (_edit(BOXES, BOXES.replace("[ ]", "[x]")), "read", "ignore", ()),
        (_edit(BOXES, BOXES + "\nmore text"), "write", "ignore", ()),  # no box changed
        (_edit(BOXES, BOXES.replace("[ ]", "[x]"), "adr-review[bot]"), "write", "ignore", ()),
        (_edit(checkbox(A, "x"), checkbox(A, "x").replace("[ ]", "[x]")), "write", "ignore", ()),  # not ours
    ],
)
def test_an_edit_of_our_comment_counts_only_from_write_access(
    event: CommentEvent, permission: str | None, kind: str, ticks: tuple[tuple[str, bool], ...]
) -> None:
    d = decide(event, permission=permission)
    assert (d.kind, d.ticks) == (kind, ticks)
    assert d.needs_permission_check is (permission is None and kind == "feedback")


@pytest.mark.parametrize(
    ("association", "permission", "kind"),
    [("MEMBER", None, "dismiss"), ("NONE", "write", "dismiss"), ("NONE", "read", "deny")],
)
def test_dismiss_is_a_collaborators_command(association: str, permission: str | None, kind: str) -> None:
    event = CommentEvent("created", "acme/shop", 7, True, 5, f"/adr-review dismiss {A} meh", association,
                         Actor("bob", "User"), "main")  # fmt: skip
    d = decide(event, permission=permission)
    assert d.kind == kind
    if kind == "dismiss":
        assert (d.finding_id, d.reason) == (A, "meh")


def test_the_ledger_line_stays_under_its_cap_and_the_comment_under_githubs_limit() -> None:
    from adr_review.core.feedback import LEDGER_CAP
    from adr_review.core.marker import Marker, with_marker
    from adr_review.core.render import DEFAULT_BUDGET, GITHUB_COMMENT_LIMIT

    ledger = Ledger()
    for i in range(40):
        shown = tuple(Shown(f"{i:04x}{j:04x}", "high", "privacy", "長い題名" * 30) for j in range(5))
        ledger = ledger.add(Revision(f"{i:016x}", shown, 0.01, (f"{i:012x}",)))
    line = ledger_line(ledger)
    assert len(line) <= LEDGER_CAP
    back = read_ledger("x\n\n" + line)
    assert back is not None and back.revised and back.revisions[-1].shown[0].title.startswith("長い題名")
    body = with_marker(
        "x" * DEFAULT_BUDGET, Marker("docs/adr/" + "p" * 200 + ".md", "k" * 128, "h" * 40, 10**17)
    )
    assert len(with_ledger(body, ledger)) <= GITHUB_COMMENT_LIMIT


# --- the ledger's monthly spend (the Action's cap reads it from every comment) ---------------------


def _costed(digest: str, cost: float, run: str) -> Revision:
    return Revision(digest * 16, (), cost, (run,) if run else ())


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([("a", 0.5, "a1" * 6, "2026-11")], {"2026-11": 0.5}),
        # the same run published again (a re-render, a retried POST) books nothing more
        ([("a", 0.5, "a1" * 6, "2026-11"), ("a", 0.5, "a1" * 6, "2026-11")], {"2026-11": 0.5}),
        # a new run of the same content, and a new revision, each book their cost in their month
        ([("a", 0.5, "a1" * 6, "2026-11"), ("a", 0.25, "b2" * 6, "2026-11")], {"2026-11": 0.75}),
        (
            [("a", 0.5, "a1" * 6, "2026-11"), ("b", 0.25, "b2" * 6, "2026-12")],
            {"2026-11": 0.5, "2026-12": 0.25},
        ),
        # the two latest months are kept
        (
            [
                ("a", 1.0, "a1" * 6, "2026-10"),
                ("b", 1.0, "b2" * 6, "2026-11"),
                ("c", 1.0, "c3" * 6, "2026-12"),
            ],
            {"2026-11": 1.0, "2026-12": 1.0},
        ),
        ([("a", 0.0, "a1" * 6, "2026-11")], {}),  # a free run books nothing
        ([("a", 0.5, "a1" * 6, None)], {}),  # no month given: nothing booked (older callers)
    ],
)
def test_the_ledger_books_each_runs_cost_once_in_its_month(
    steps: list[tuple[str, float, str, str | None]], expected: dict[str, float]
) -> None:
    body: str | None = None
    for digest, cost, run, month in steps:
        ledger = next_ledger(body, _costed(digest, cost, run), month)
        body = with_ledger("the comment", ledger)
    got = read_ledger(body or "")
    assert got is not None and dict(got.spend) == pytest.approx(expected)


def test_a_malformed_spend_entry_is_ignored_and_the_rest_of_the_ledger_kept() -> None:
    body = with_ledger("x", next_ledger(None, _costed("a", 0.5, "a1" * 6), "2026-12"))
    hostile = body.replace(
        '"s":{"2026-12":0.5}', '"s":{"2026-12":"lots","2026-13x":1,"2026-11":-4,"2026-10":1e300}'
    )
    got = read_ledger(hostile)
    assert got is not None and got.spend == () and len(got.revisions) == 1


def test_a_trimmed_ledger_keeps_its_spend() -> None:
    ledger = Ledger().add(_costed("a", 0.5, "a1" * 6), "2026-12")
    for i in range(40):  # many revisions with long titles: the line is trimmed to its cap
        shown = tuple(Shown(f"{i:08x}", "high", "devils-advocate", "t" * 100) for _ in range(3))
        ledger = ledger.add(Revision(f"{i:016x}", shown, 0.01, (f"{i:012x}",)), "2026-12")
    got = read_ledger(with_ledger("x", ledger))
    assert got is not None and got.spent_in("2026-12") == pytest.approx(0.5 + 0.4)
