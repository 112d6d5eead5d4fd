"""The feedback report's numbers and verdict (app/adr_review/core/report.py), and its Markdown (render_report)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adr_review.core.comments import GUARD_MARKER_PATH
from adr_review.core.outcomes import AdrOutcome, FindingOutcome
from adr_review.core.render import render_report
from adr_review.core.report import MIN_SHOWN, build_report, most_dismissed, report_dict, verdict
from adr_review.core.report_view import mermaid_label, pct

REPO = "acme/shop"
DAY = 86_400.0
T0 = 1_800_000_000.0


def adr(pr: int = 7, path: str = "docs/adr/0008.md", revised: bool = False, cost: float = 0.0) -> AdrOutcome:
    return AdrOutcome(REPO, pr, path, T0, T0, 2 if revised else 1, revised, cost)


def finding(
    i: int,
    pr: int = 7,
    path: str = "docs/adr/0008.md",
    perspective: str = "privacy",
    adopted: bool = False,
    dismissed: bool = False,
    reason: str = "",
) -> FindingOutcome:
    return FindingOutcome(
        REPO,
        pr,
        path,
        f"{i:08x}",
        "high",
        perspective,
        f"title {i}",
        T0 + i,
        adopted=adopted,
        adopted_by="alice" if adopted else None,
        dismissed=dismissed,
        dismissed_by="bob" if dismissed else None,
        reason=reason,
    )


def many(n: int, adopted: int = 0, dismissed: int = 0, pr: int = 7) -> list[FindingOutcome]:
    return [
        finding(i, pr=pr, adopted=i < adopted, dismissed=adopted <= i < adopted + dismissed) for i in range(n)
    ]


@dataclass(frozen=True)
class Row:
    name: str
    adrs: list[AdrOutcome]
    findings: list[FindingOutcome]
    min_shown: int
    want: tuple[
        object, ...
    ]  # shown, adopted, dismissed, with findings, revised, acceptance, revision, verdict


ROWS = [
    # The done-when: 4 shown, 2 adopted, 1 dismissed, the ADR revised -> keep (with the minimum at 4).
    Row(
        "done-when",
        [adr(revised=True)],
        many(4, adopted=2, dismissed=1),
        4,
        (4, 2, 1, 1, 1, 0.5, 1.0, "keep"),
    ),
    # The same numbers under the default minimum of 10 findings: no verdict yet.
    Row(
        "done-when, default minimum",
        [adr(revised=True)],
        many(4, adopted=2, dismissed=1),
        MIN_SHOWN,
        (4, 2, 1, 1, 1, 0.5, 1.0, "not_enough_data"),
    ),
    Row("nothing shown", [adr(), adr(pr=8)], [], 0, (0, 0, 0, 0, 0, None, None, "not_enough_data")),
    Row("zero ADRs", [], [], 0, (0, 0, 0, 0, 0, None, None, "not_enough_data")),
    # 1 of 10 adopted (10 %): below the 20 % line.
    Row(
        "low acceptance",
        [adr(revised=True)],
        many(10, adopted=1),
        10,
        (10, 1, 0, 1, 1, 0.1, 1.0, "retire:acceptance"),
    ),
    # Exactly on the lines keeps the gate ("fewer than" retires).
    Row(
        "on the lines",
        [adr(pr=p, revised=p == 0) for p in range(10)],
        [finding(i, pr=i % 10, adopted=i < 2) for i in range(10)],
        10,
        (10, 2, 0, 10, 1, 0.2, 0.1, "keep"),
    ),
    # No ADR revised: below the 10 % line as well as the acceptance line.
    Row("both low", [adr()], many(10), 10, (10, 0, 0, 1, 0, 0.0, 0.0, "retire:acceptance+revision")),
    # A revised ADR that had no finding shown is not in the revision rate's denominator.
    Row(
        "revised without findings",
        [adr(revised=False), adr(pr=9, revised=True)],
        many(10, adopted=5),
        10,
        (10, 5, 0, 1, 0, 0.5, 0.0, "retire:revision"),
    ),
    # A finding both ticked and dismissed counts in both: adopted (2 of 10, on the line) and dismissed.
    Row(
        "ticked and dismissed",
        [adr(revised=True)],
        [
            finding(0, adopted=True, dismissed=True),
            finding(1, adopted=True),
            *(finding(i) for i in range(2, 10)),
        ],
        10,
        (10, 2, 1, 1, 1, 0.2, 1.0, "keep"),
    ),
    # Findings whose ADR was first reviewed before the window: counted as findings, no ADR in the rate.
    Row("findings only", [], many(10, adopted=5), 10, (10, 5, 0, 0, 0, 0.5, None, "not_enough_data")),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_report_numbers_and_verdict(row: Row) -> None:
    r = build_report(
        row.adrs, row.findings, repo=REPO, since=T0 - DAY, until=T0 + DAY, min_shown=row.min_shown
    )
    kind = r.verdict.kind + (":" + "+".join(r.verdict.reasons) if r.verdict.reasons else "")
    got = (
        r.findings_shown,
        r.findings_adopted,
        r.findings_dismissed,
        r.adrs_with_findings,
        r.adrs_revised,
        r.acceptance_rate,
        r.revision_rate,
        kind,
    )
    assert got == row.want


@pytest.mark.parametrize(
    ("adrs", "want"),
    [([], None), ([adr(cost=0.3), adr(pr=8, cost=0.1)], 0.2), ([adr()], 0.0)],
)
def test_cost_per_reviewed_adr(adrs: list[AdrOutcome], want: float | None) -> None:
    r = build_report(adrs, [], repo=None, since=0, until=1)
    assert r.cost_per_adr == (None if want is None else pytest.approx(want))


def test_most_dismissed_perspectives_by_count_then_share_then_name() -> None:
    fs = [
        finding(0, perspective="cost", dismissed=True),
        finding(1, perspective="cost", dismissed=True),
        finding(2, perspective="cost"),
        finding(3, perspective="cost"),  # cost: 2 of 4
        finding(4, perspective="privacy", dismissed=True),
        finding(5, perspective="privacy", dismissed=True),  # privacy: 2 of 2, a larger share
        finding(6, perspective="premortem/technical", dismissed=True),
        finding(7, perspective="adjacent_domain", dismissed=True),
        finding(8, perspective="security"),  # never dismissed: not listed
    ]
    got = [(c.perspective, c.dismissed, c.shown, c.share) for c in most_dismissed(fs)]
    assert got == [
        ("privacy", 2, 2, 1.0),
        ("cost", 2, 4, 0.5),
        ("adjacent_domain", 1, 1, 1.0),
        ("premortem/technical", 1, 1, 1.0),
    ]
    assert len(most_dismissed(fs, top=1)) == 1


@pytest.mark.parametrize(
    ("acceptance", "revision", "shown", "minimum", "kind"),
    [
        (0.5, 0.5, 0, 0, "not_enough_data"),  # a minimum of 0 still needs one finding
        (0.5, None, 10, 10, "not_enough_data"),
        (0.19999, 0.5, 10, 10, "retire"),
        (0.2, 0.09999, 10, 10, "retire"),
        (0.2, 0.1, 10, 10, "keep"),
        (0.9, 0.9, 9, 10, "not_enough_data"),
    ],
)
def test_verdict_lines(
    acceptance: float, revision: float | None, shown: int, minimum: int, kind: str
) -> None:
    assert verdict(acceptance, revision, shown, minimum).kind == kind


def test_json_names_the_denominator_and_the_lines() -> None:
    r = build_report(
        [adr(revised=True)], many(4, adopted=2, dismissed=1), repo=REPO, since=T0, until=T0 + DAY, min_shown=4
    )
    data = report_dict(r)
    assert data["revision_rate_denominator"] == "adrs_with_findings"
    assert data["sunset"] == {
        "acceptance_line": 0.2,
        "revision_line": 0.1,
        "min_findings_shown": 4,
        "verdict": "keep",
        "failed": [],
        "text": "keep",
    }
    assert data["since_utc"] == "2027-01-15T08:00:00+00:00"


def test_markdown_done_when_numbers_and_charts() -> None:
    r = build_report(
        [adr(revised=True)],
        [
            *many(3, adopted=2),
            finding(3, perspective="premortem/technical", dismissed=True, reason="accepted risk"),
        ],
        repo=REPO,
        since=T0 - 30 * DAY,
        until=T0 + 1,
        min_shown=4,
    )
    md = render_report(r)
    assert "**Sunset rule (≥ 20 % of findings adopted, ≥ 10 % of ADRs revised): keep" in md
    assert "| **50 %** (2 of 4) | 20 % | ✅ |" in md
    assert "| **100 %** (1 of 1) | 10 % | ✅ |" in md
    assert "| Dismissed (`/adr-review dismiss`) | 1 (25 %) |" in md
    assert "bar [50.0, 100.0]\n  line [20.0, 10.0]" in md
    assert '"premortem/technical" : 1' in md
    assert "(UTC, 30 days)" in md
    ja = render_report(r, language="ja")
    assert "継続" in ja and "**50%** (4 件中 2 件)" in ja


def test_markdown_without_data_has_no_chart_and_says_why() -> None:
    md = render_report(build_report([], [], repo=None, since=T0, until=T0 + DAY))
    assert "not enough data — 0 findings shown, a verdict needs at least 10" in md
    assert "```mermaid" not in md and "| **—** (0 of 0) |" in md


def test_untrusted_titles_reasons_and_perspectives_are_sanitised() -> None:
    evil = FindingOutcome(
        REPO,
        7,
        "docs/adr/<x>.md",
        "deadbeef",
        "high",
        'privacy" : 99\n  "x',
        "@org/team see #12 ![i](http://e/x.png) <img src=x>",
        T0,
        dismissed=True,
        dismissed_by="@mallory",
        reason="| broken | table\n# heading <script>",
    )
    md = render_report(build_report([adr()], [evil], repo=REPO, since=T0 - 1, until=T0 + 1))
    assert "<img" not in md and "<script" not in md and "<x>" not in md
    assert "@org" not in md and "@mallory" not in md and "#12" not in md
    assert "![" not in md
    assert "\\| broken \\| table # heading" in md  # pipes escaped, the newline folded
    assert '"privacy 99 x" : 1' in md  # the Mermaid label lost its quotes and colon


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('a"b', "a b"),
        ("%%{init: x}%%", "init x"),
        ("", "?"),
        ("ja 日本", "ja"),
        ("premortem/technical", "premortem/technical"),
    ],
)
def test_mermaid_label(text: str, want: str) -> None:
    assert mermaid_label(text) == want


@pytest.mark.parametrize(("rate", "want"), [(None, "—"), (0.5, "50 %"), (1 / 3, "33.3 %"), (0.199, "19.9 %")])
def test_percent(rate: float | None, want: str) -> None:
    assert pct(rate, {"percent": "{n} %", "none": "—"}) == want


def test_english_and_japanese_have_the_same_report_strings() -> None:
    from adr_review.core import render

    tables = render._catalog(None).report
    assert tables["en"] and set(tables["en"]) == set(tables["ja"])


@given(st.text(max_size=200))
def test_a_mermaid_label_is_never_empty_and_only_plain_characters(text: str) -> None:
    label = mermaid_label(text)
    assert label and len(label) <= 40
    assert all(c.isascii() and (c.isalnum() or c in " _./-") for c in label) or label == "?"


# ------------------------------------------------------------------------------------------------
# The guard's answers (issue 28): recorded under the guard comment's marker path, counted apart


def guard_answer(i: int, adopted: bool = False, dismissed: bool = False, reason: str = "") -> FindingOutcome:
    """A guard answer as the store returns it: the verdict as its severity, its ADR as its title."""
    return FindingOutcome(
        REPO, 9, GUARD_MARKER_PATH, f"{i:08x}", "conflicts", "guard", f"ADR-000{i}: Use PostgreSQL", T0 + i,
        adopted=adopted, dismissed=dismissed, dismissed_by="bob" if dismissed else None, reason=reason,
    )  # fmt: skip


GUARD_COMMENT = AdrOutcome(REPO, 9, GUARD_MARKER_PATH, T0, T0, 1, False, 0.0)


def test_guard_answers_are_counted_apart_and_move_neither_rate_nor_verdict() -> None:
    findings = many(10, adopted=1)  # 10 % adopted: the gate would retire
    guard = [guard_answer(1, adopted=True), guard_answer(2, adopted=True), guard_answer(3, dismissed=True)]
    alone = build_report([adr()], findings, repo=REPO, since=T0 - 1, until=T0 + DAY)
    both = build_report([adr(), GUARD_COMMENT], findings + guard, repo=REPO, since=T0 - 1, until=T0 + DAY)
    assert (both.findings_shown, both.findings_adopted, both.findings_dismissed) == (10, 1, 0)
    assert (both.acceptance_rate, both.revision_rate, both.verdict) == (
        alone.acceptance_rate, alone.revision_rate, alone.verdict,
    )  # fmt: skip
    assert (both.adrs_reviewed, both.cost_per_adr, both.dismissals) == (1, alone.cost_per_adr, ())
    g = both.guard
    assert (g.prs, g.shown, g.adopted, g.dismissed) == (1, 3, 2, 1)
    assert [d.finding_id for d in g.dismissals] == [f"{3:08x}"]
    assert report_dict(both)["guard"] == {
        "prs": 1, "answers_shown": 3, "answers_adopted": 2, "answers_dismissed": 1,
        "adoption_rate": 2 / 3, "latest_dismissals": [report_dict(both)["guard"]["latest_dismissals"][0]],
    }  # fmt: skip
    assert alone.guard.shown == 0 and report_dict(alone)["guard"]["answers_shown"] == 0


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_markdown_shows_the_guard_in_its_own_section_only_when_it_ran(language: str) -> None:
    findings = many(10, adopted=1)
    guard = [guard_answer(1, adopted=True), guard_answer(2, dismissed=True, reason="ADR-0002 was superseded")]
    md = render_report(
        build_report([adr(), GUARD_COMMENT], findings + guard, repo=REPO, since=T0 - 1, until=T0 + DAY),
        language=language,
    )
    heading = "### ADR guard answers" if language == "en" else "### ADR ガードの回答"
    head, section = md.split(heading)
    assert "(1 of 10)" in head or "10 件中 1 件" in head  # the findings' rate, without the guard's
    assert "ADR-0002: Use PostgreSQL" in section and "ADR-0002 was superseded" in section
    assert "| 1 (50 %) |" in section or "| 1 (50%) |" in section  # adopted, dismissed: 1 of 2 each
    assert "ADR-000" not in head  # no guard answer among the findings' dismissals
    without = render_report(build_report([adr()], findings, repo=REPO, since=T0 - 1, until=T0 + DAY))
    assert "ADR guard" not in without
