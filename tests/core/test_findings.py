"""Blind-spot finding guards: enum normalisation, FMEA, coverage gaps, Jaccard dedupe, own-risk exclusion, cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from adr_review.core.adr import parse_adr
from adr_review.core.finding_checks import adr_ids_named, known_adr_ids, verify_finding
from adr_review.core.findings import (
    ACTIONABILITIES,
    SEVERITIES,
    clamp_score,
    content_tokens,
    count_by_severity,
    coverage_gaps,
    covered_by,
    dedupe_findings,
    exclude_covered,
    jaccard,
    normalize_actionability,
    normalize_category,
    normalize_severity,
    normalize_source,
    own_risk_items,
    risk_priority,
    severity_from_rpn,
)
from adr_review.core.noise_budget import cap_findings, rank_findings
from adr_review.core.passages import reader_passages
from adr_review.core.results import Finding

SEED_002 = Path(__file__).resolve().parents[1] / "fixtures" / "seeds" / "002_da59eb14823afb63.txt"


def finding(title: str, severity: str = "medium", source: str = "devils_advocate", **kw: object) -> Finding:
    base: dict[str, object] = {
        "source": (source,),
        "title": title,
        "severity": severity,
        "actionability": "add_to_risks",
        "quote": f"quote for {title}",
        "section": "Decision",
        "gap": f"gap for {title}",
        "suggested_action": "do something",
        "dedupe_group": "",
    }
    base.update(kw)
    return Finding(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("critical", "critical"),
        ("CRITICAL", "critical"),
        (" High ", "high"),
        ("med", "medium"),
        ("Moderate", "medium"),
        ("minor", "low"),
        ("blocker", "critical"),
        ("major", "high"),
        ("致命的", "critical"),
        ("高", "high"),
        ("中", "medium"),
        ("低", "low"),
        (5, "critical"),
        (4.2, "high"),
        (3, "medium"),
        (1, "low"),
        (99, "critical"),  # clamped to 5
        ("urgent!!", "medium"),  # unknown -> neutral default
        ("", "medium"),
        (None, "medium"),
        (True, "medium"),
    ],
)
def test_severity_is_normalised_not_trusted(raw: object, expected: str) -> None:
    assert normalize_severity(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("block", "block"),
        ("Revise ADR", "revise_adr"),
        ("revise-adr", "revise_adr"),
        ("revise", "revise_adr"),
        ("ADD_TO_RISKS", "add_to_risks"),
        ("add to risk", "add_to_risks"),
        ("monitor", "monitor"),
        ("watch", "monitor"),
        ("reject", "block"),
        ("ship it", "add_to_risks"),  # unknown -> "at least write it down"
        (None, "add_to_risks"),
        (3, "add_to_risks"),
    ],
)
def test_actionability_is_normalised_not_trusted(raw: object, expected: str) -> None:
    assert normalize_actionability(raw) == expected


def test_every_enum_value_maps_to_itself() -> None:
    assert [normalize_severity(s) for s in SEVERITIES] == list(SEVERITIES)
    assert [normalize_actionability(a) for a in ACTIONABILITIES] == list(ACTIONABILITIES)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("technical", "technical"),
        ("Technology", "technical"),
        ("技術", "technical"),
        ("operational", "operational"),
        ("運用", "operational"),
        ("business-regulatory", "business_regulatory"),
        ("Business / Regulatory", "business_regulatory"),
        ("ビジネス・規制", "business_regulatory"),
        ("cognitive", "cognitive"),
        ("認知", "cognitive"),
        ("financial", None),
        (None, None),
    ],
)
def test_premortem_category_aliases(raw: object, expected: str | None) -> None:
    assert normalize_category(raw) == expected


@pytest.mark.parametrize(
    ("categories", "gaps"),
    [
        (["technical", "operational", "business_regulatory", "cognitive"], ()),
        (["技術", "運用", "ビジネス・規制", "認知"], ()),
        (["technical", "technical", "operational"], ("business_regulatory", "cognitive")),
        (["cognitive", "nonsense", None], ("technical", "operational", "business_regulatory")),
        ([], ("technical", "operational", "business_regulatory", "cognitive")),
    ],
)
def test_premortem_coverage_gaps(categories: list[str | None], gaps: tuple[str, ...]) -> None:
    assert coverage_gaps(categories) == gaps


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("devils_advocate", "devils_advocate"),
        ("Devil's Advocate", "devils_advocate"),
        ("DA", "devils_advocate"),
        ("pre-mortem", "premortem"),
        ("PM", "premortem"),
        ("Adjacent Domain", "adjacent_domain"),
        ("judge", None),
        ("someone else", None),
    ],
)
def test_critic_names_are_normalised(source: str, expected: str | None) -> None:
    assert normalize_source(source) == expected


@pytest.mark.parametrize(
    ("s", "p", "i", "rpn"),
    [(5, 5, 5, 125), (1, 1, 1, 1), (4, 3, 2, 24), (9, 0, -3, 5), ("4", "x", 2.6, 4 * 3 * 3)],
)
def test_risk_priority_is_recomputed_from_clamped_factors(s: object, p: object, i: object, rpn: int) -> None:
    assert risk_priority(s, p, i) == rpn


def test_clamp_score_bounds() -> None:
    assert [clamp_score(v) for v in (-1, 0, 1, 2.4, 2.6, 5, 6, None, "abc")] == [1, 1, 1, 2, 3, 5, 5, 3, 3]


@pytest.mark.parametrize(
    ("rpn", "severity"),
    [
        (125, "critical"),
        (64, "critical"),
        (63, "high"),
        (27, "high"),
        (26, "medium"),
        (8, "medium"),
        (7, "low"),
    ],
)
def test_severity_from_rpn_default_thresholds(rpn: int, severity: str) -> None:
    assert severity_from_rpn(rpn) == severity


def test_severity_from_rpn_takes_configured_thresholds() -> None:
    assert severity_from_rpn(30, {"critical": 30}) == "critical"
    assert severity_from_rpn(30) == "high"


# --- Jaccard dedupe -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Vendor lock-in to the Anthropic API", "Lock-in to Anthropic as the API vendor", True),
        ("No rollback trigger is defined", "No rollback trigger defined", True),
        ("Cost grows with every ADR", "Latency grows with every ADR", False),
        ("Alert fatigue from false positives", "Secrets leak into the prompt", False),
        # Japanese: CJK bigrams; particles (hiragana) do not count as shared content
        ("3 モデル合意が訓練データバイアスを共有する", "3 モデル合意が同じ訓練データのバイアスを共有", True),
        ("誤検知によるアラート疲労", "アラート疲労と誤検知", True),
        ("誤検知によるアラート疲労", "月次コストの上限超過", False),
        ("判定ロジックの誤分類", "判定ロジックのコスト", False),
    ],
)
def test_jaccard_threshold_separates_duplicates(a: str, b: str, same: bool) -> None:
    assert (jaccard(a, b) >= 0.7) is same


def test_content_tokens_drop_function_words_but_keep_all_function_word_text() -> None:
    assert content_tokens("the cost of the index") == {"cost", "index"}
    assert "の増" not in content_tokens("実行時間の増加")
    assert content_tokens("the of") == {"the", "of"}


def test_dedupe_merges_sources_and_keeps_the_higher_severity() -> None:
    findings = [
        finding("Vendor lock-in to the Anthropic API", "medium", "devils_advocate", dedupe_group="lock-in"),
        finding("No owner once the author leaves", "low", "premortem"),
        finding("Lock-in to Anthropic as the API vendor", "critical", "premortem", actionability="block"),
        finding("Anthropic API vendor lock-in", "high", "adjacent_domain"),
    ]
    merged, count = dedupe_findings(findings)
    assert count == 2
    assert [f.title for f in merged] == [
        "Lock-in to Anthropic as the API vendor",
        "No owner once the author leaves",
    ]
    top = merged[0]
    assert top.severity == "critical"
    assert top.source == ("premortem", "devils_advocate", "adjacent_domain")
    assert top.actionability == "block"
    assert top.dedupe_group == "lock-in"  # the winner had none: the loser's is kept


def test_dedupe_severity_tie_keeps_the_first_and_the_more_urgent_action() -> None:
    a = finding("Migration path is undefined", "high", "devils_advocate", actionability="monitor")
    b = finding("The migration path is undefined", "high", "premortem", actionability="revise_adr")
    (merged,), count = dedupe_findings([a, b])
    assert count == 1
    assert merged.title == a.title
    assert merged.source == ("devils_advocate", "premortem")
    assert merged.actionability == "revise_adr"


def test_dedupe_japanese_findings() -> None:
    findings = [
        finding("誤検知によるアラート疲労", "medium", "devils_advocate", category=None),
        finding("月次コストの上限超過", "low", "premortem", category="business_regulatory"),
        finding("アラート疲労と誤検知", "high", "premortem", category="cognitive"),
    ]
    merged, count = dedupe_findings(findings)
    assert count == 1
    assert len(merged) == 2
    alert = merged[0]
    assert alert.title == "アラート疲労と誤検知"
    assert alert.severity == "high"
    assert set(alert.source) == {"devils_advocate", "premortem"}
    assert alert.category == "cognitive"


def test_dedupe_leaves_distinct_findings_alone() -> None:
    findings = [
        finding(t) for t in ("Cost grows with every ADR", "Latency grows with every ADR", "No audit trail")
    ]
    merged, count = dedupe_findings(findings)
    assert count == 0
    assert merged == tuple(findings)


def test_dedupe_threshold_is_inclusive() -> None:
    # 7 shared content tokens of 10 distinct: exactly 0.7
    a = "alpha beta gamma delta epsilon zeta eta theta"
    b = "alpha beta gamma delta epsilon zeta eta iota kappa"
    assert jaccard(a, b) == pytest.approx(0.7)
    assert dedupe_findings([finding(a), finding(b)])[1] == 1
    assert dedupe_findings([finding(a), finding(b)], threshold=0.71)[1] == 0


# --- the ADR's own risks / alternatives ----------------------------------------------------------


def test_own_risk_items_split_bullets_paragraphs_and_sentences() -> None:
    sections = {
        "risks": "- Vendor lock-in to one LLM provider.\n- Costs grow with usage. Alerts may be ignored.\n\nA paragraph.",
        "alternatives": "* Option B: keep it manual\n1. Option C: drop the gate",
        "decision": "We will do it.",
    }
    assert own_risk_items(sections, ("risks", "alternatives")) == (
        "Vendor lock-in to one LLM provider.",
        "Costs grow with usage.",
        "Alerts may be ignored.",
        "A paragraph.",
        "Option B: keep it manual",
        "Option C: drop the gate",
    )


def test_findings_already_in_the_adrs_risks_are_excluded() -> None:
    items = own_risk_items(
        {
            "risks": "- Vendor lock-in to one LLM provider\n- Costs grow linearly with the number of ADRs reviewed"
        },
        ("risks",),
    )
    kept, dropped = exclude_covered(
        [
            finding("LLM provider vendor lock-in"),
            finding("Costs grow with the number of ADRs"),
            finding("No rollback trigger is defined"),
            finding("Vendor lock-in"),  # fully contained, but too short to judge by containment
        ],
        items,
    )
    assert [f.title for f in kept] == ["No rollback trigger is defined", "Vendor lock-in"]
    assert [(f.title, item) for f, item in dropped] == [
        ("LLM provider vendor lock-in", "Vendor lock-in to one LLM provider"),
        ("Costs grow with the number of ADRs", "Costs grow linearly with the number of ADRs reviewed"),
    ]


def test_japanese_findings_covered_by_the_seed_adrs_consequences() -> None:
    adr = parse_adr("0071.md", SEED_002.read_bytes())
    items = own_risk_items(adr.sections, ("risks", "alternatives", "consequences"))
    assert covered_by(finding("LLM コスト増加"), items) == (
        "LLM コストが 1 ADR あたり $0.10-0.30 増加 (月 5 ADR で $0.50、月 15 ADR で $1.50)"
    )
    assert (
        covered_by(finding("Pipeline 実行時間の増加"), items)
        == "Pipeline 実行時間が +30-90 秒/ADR 増加 (async)"
    )
    assert covered_by(finding("false positive によるアラート疲労"), items) is not None
    # raised in the ADR's context as a problem, but not among its risks/alternatives/consequences
    assert covered_by(finding("単一の起案者による確証バイアス"), items) is None
    assert covered_by(finding("Constitution 観点の陳腐化"), items) is None
    # the ADR lists the skip-through; a finding that it happens *silently* adds something new
    assert covered_by(finding("全ノード失敗時の skip-through が黙って続く"), items) is None


# --- ranking, cap, counts --------------------------------------------------------------------------


def test_cap_keeps_the_most_important_and_counts_the_rest() -> None:
    findings = [
        finding("a", "low"),
        finding("b", "critical", actionability="monitor"),
        finding("c", "medium"),
        finding("d", "critical", actionability="block"),
        finding("e", "high"),
    ]
    shown, omitted = cap_findings(findings, 3)
    assert [f.title for f in shown] == ["d", "b", "e"]
    assert omitted == 2
    assert cap_findings(findings, 10) == (rank_findings(findings), 0)
    assert cap_findings(findings, 0) == ((), 5)
    assert cap_findings(findings, -1) == ((), 5)


def test_count_by_severity_has_every_key() -> None:
    counts = count_by_severity([finding("a", "high"), finding("b", "high"), finding("c", "low")])
    assert counts == {"critical": 0, "high": 2, "medium": 0, "low": 1}
    assert count_by_severity([]) == dict.fromkeys(SEVERITIES, 0)


# --- verification -------------------------------------------------------------------------------------

ADR_TEXT = """# ADR-0042 Queue the reviews

## Decision
Reviews run on a queue with three workers, as ADR-0007 set up.
<!-- TODO: decide the retry policy with ops -->

## Risks
- A slow model call blocks one worker for its whole timeout.
"""
PASSAGES = reader_passages(ADR_TEXT)
KNOWN = known_adr_ids("ADR-0042", PASSAGES, ["ADR-0003"])


def test_known_ids_are_the_adr_its_citations_and_what_it_names() -> None:
    assert adr_ids_named("see ADR-7 and ＡＤＲ-００１２, not ADR-") == ("ADR-7", "ADR-0012")
    assert {"ADR-42", "ADR-3", "ADR-7"} == KNOWN


@pytest.mark.parametrize(
    ("quote", "title", "unverified", "section"),
    [
        ("Reviews run on a queue with three workers", "Three workers are too few", None, "Decision"),
        ("Reviews run on a queue with five workers", "Fabricated quote", "quote_not_found", "Decision"),
        ("decide the retry policy with ops", "From an HTML comment", "quote_not_found", "Decision"),
        ("queue", "One word", "quote_too_short", "Decision"),
        ("", "No quote", "no_quote", "Decision"),
        ("Reviews run on a queue with three workers", "Contradicts ADR-9999", "unknown_adr", "Decision"),
        ("Reviews run on a queue with three workers", "Revisits ADR-0007's queue", None, "Decision"),
        ("A slow model call blocks one worker", "Timeouts", None, "Risks"),
    ],
)
def test_a_finding_is_verified_like_a_citation_reason(
    quote: str, title: str, unverified: str | None, section: str
) -> None:
    checked = verify_finding(finding(title, quote=quote, section="Decision"), PASSAGES, KNOWN)
    assert checked.unverified == unverified
    assert checked.section == section  # once verified: the heading the quote stands under
    if unverified == "unknown_adr":
        assert checked.unknown_ids == ("ADR-9999",)


def test_own_risk_items_are_passages_a_reader_sees() -> None:
    items = own_risk_items(
        {
            "risks": "- **Vendor** lock-in <!-- say which vendor -->\n- Costs grow with `N` reviews. Alerts fire.\n"
        },
        ("risks",),
    )
    assert items == ("Vendor lock-in", "Costs grow with N reviews.", "Alerts fire.")


QUOTE = "Reviews run on a queue with three workers"


@pytest.mark.parametrize(
    ("title", "unknown"),
    [
        ("Contradicts ADR 0999", "ADR 0999"),
        ("Contradicts ADR\u20130777", "ADR-0777"),  # en dash
        ("Contradicts ADR\u20110444", "ADR-0444"),  # non-breaking hyphen
        ("Contradicts ADR\u22120333", "ADR-0333"),  # minus sign
        ("Contradicts ＡＤＲ－０５５５", "ADR-0555"),  # full width
        ("Contradicts ADR-0\u2060666", "ADR-0666"),  # split by a word joiner
        ("Contradicts ADR_0888", "ADR_0888"),
    ],
)
def test_an_unknown_id_is_unknown_however_its_dash_space_or_width_is_written(
    title: str, unknown: str
) -> None:
    checked = verify_finding(finding(title, quote=QUOTE), PASSAGES, KNOWN)
    assert checked.unverified == "unknown_adr" and checked.unknown_ids == (unknown,)


@pytest.mark.parametrize(
    "title",
    ["Revisits ADR 0007", "Revisits ADR\u20130007", "Revisits ＡＤＲ－０００７", "Revisits ADR-0\u2060007"],
)
def test_a_known_id_is_known_however_it_is_written(title: str) -> None:
    assert verify_finding(finding(title, quote=QUOTE), PASSAGES, KNOWN).unverified is None
