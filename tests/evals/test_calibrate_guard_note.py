"""What benchmarks/calibrate_guard.py --write says the guard's model was fitted on: the draw of the
guard set its records came from (they do not say it themselves), and the set the repository holds now
when that is another one; and the shipped model's docstring says it."""

from __future__ import annotations

from types import ModuleType

import pytest

import adr_review.core.guard_model as guard_model
from tests.evals.test_build_guard_set import benchmark_script


def _calibrate() -> ModuleType:
    return benchmark_script("calibrate_guard")


@pytest.mark.parametrize(
    ("drawn", "shipped", "names_the_set_now"),
    [
        ("month", (292, "size"), True),  # the first draw's records, the size-matched set in the repository
        ("size", (292, "size"), False),
        ("size", (300, "size"), True),  # the same draw, but the set has changed since
    ],
)
def test_the_note_names_the_draw_and_the_set_now_when_it_differs(
    drawn: str, shipped: tuple[int, str], names_the_set_now: bool
) -> None:
    note = _calibrate().model_note(
        292, ["a/x", "b/y"], "fitted", "bm25", 0.36, "balanced", {"hit_rate": 0.6}, drawn, shipped
    )
    assert note.startswith(
        f"292 cases of the guard set drawn with `benchmarks/build_guard_set.py --match {drawn}`"
    )
    assert ("now holds" in note) is names_the_set_now
    assert "left out" not in note


def test_the_note_names_the_repositories_left_out_of_the_fit() -> None:
    note = _calibrate().model_note(
        10, ["a/x", "b/y"], "fitted", "bm25", 0.1, "balanced", {}, "size", (12, "size"), ["c/agent"]
    )
    assert "(a/x, b/y; left out: c/agent)" in note


def test_the_shipped_docstring_cites_the_draw_it_was_fitted_on_and_the_set_now() -> None:
    cases, negatives = _calibrate().shipped_set()
    doc = guard_model.__doc__ or ""
    # refitted on the size-matched set's human-maintained repositories, the agent-written ones left out
    assert "394 cases of the guard set drawn with `benchmarks/build_guard_set.py --match size`" in doc
    assert "left out: iog-creator/Gemantria, sapientpants/sonarqube-mcp-server" in doc
    assert f"benchmarks/guard_cases.json now holds {cases} cases drawn with `--match {negatives}`" in doc


@pytest.mark.parametrize(
    ("named", "listed"),
    [
        ([], ["b.md"]),  # the floor alone: a.md (0.1) is below it
        ([{"path": "a.md", "lines": True}], ["a.md", "b.md"]),  # named with a matching line: first, no floor
        ([{"path": "a.md", "lines": False}], ["b.md"]),  # named, but no changed line matches it
        ([{"path": "z.md", "lines": True}], ["z.md", "b.md"]),  # named though the index did not return it
        # named ones in the ranking's order, the head's first: not the order the names came in
        ([{"path": "z.md", "lines": True}, {"path": "a.md", "lines": True}], ["a.md", "z.md", "b.md"]),
    ],
)
def test_the_replay_lists_what_the_change_names_first_whatever_its_evidence(
    named: list[dict[str, object]], listed: list[str]
) -> None:
    head = [(0.9, "b.md", True), (0.1, "a.md", True), (0.8, "c.md", False)]
    assert _calibrate()._listing({"named": named}, head, 0.5) == listed
