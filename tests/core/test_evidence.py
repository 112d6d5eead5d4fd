"""The calibrated evidence: which candidates earn a row, and the label each earns."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from adr_review.core.adr import parse_adr
from adr_review.core.evidence import (
    HEAD,
    Background,
    EvidenceModel,
    assess,
    cap,
    eligible,
    features_of,
    linked_paths,
    shown_band,
)
from adr_review.core.evidence_model import DEFAULT_EVIDENCE
from adr_review.core.fusion import DocScores, FusionParams, rank
from adr_review.core.lexical import LexicalIndex
from adr_review.core.results import Candidate

MODEL = EvidenceModel(intercept=0.0, weights={}, floor=0.1, med=0.25, high=0.5)


def cand(n: int, evidence: float | None, *, qualified: bool = True, why: str = "qualified") -> Candidate:
    adr = parse_adr(f"{n:04d}-x.md", f"# ADR-{n:04d} X\n\n## Decision\nText {n}.\n".encode())
    return Candidate(
        adr=adr, dense=0.5, bm25=1.0, bm25_rel=1.0, fused=1.0, qualified=qualified, why=why, evidence=evidence
    )


@pytest.mark.parametrize(
    ("probability", "band"),
    [
        (0.9, "high"),
        (0.5, "high"),
        (0.49, "med"),
        (0.25, "med"),
        (0.24, "low"),
        (0.1, "low"),
        (0.099, None),
        (0.0, None),
    ],
)
def test_bands_of_a_probability(probability: float, band: str | None) -> None:
    assert MODEL.band(probability) == band


@pytest.mark.parametrize(
    ("evidence", "qualified", "linked", "band"),
    [
        (0.6, True, False, "high"),
        (0.05, True, False, None),  # qualified by the OR-gate, but the evidence does not earn a row
        (0.05, True, True, "high"),  # the proposal links to it
        (None, True, False, "low"),  # unscored (a cross-language slot): shown, and nothing says more
        (None, False, False, None),
    ],
)
def test_shown_band(evidence: float | None, qualified: bool, linked: bool, band: str | None) -> None:
    assert shown_band(cand(1, evidence, qualified=qualified), MODEL, linked=linked) == band


def test_only_the_head_is_eligible_unless_linked_or_unscored() -> None:
    ranked = [cand(i, 0.9) for i in range(1, HEAD + 3)]
    assert [i for i, _ in eligible(ranked, MODEL)] == list(range(HEAD))
    last = ranked[-1].adr.path
    assert [i for i, _ in eligible(ranked, MODEL, frozenset({last}))] == [*range(HEAD), HEAD + 1]
    unscored = [*ranked[:HEAD], cand(99, None)]
    assert [i for i, _ in eligible(unscored, MODEL)] == list(range(HEAD + 1))


@pytest.mark.parametrize(
    ("label", "ceiling", "out"),
    [
        ("high", "med", "med"),
        ("med", "high", "med"),
        ("low", "high", "low"),
        ("high", None, "high"),
        ("med", "low", "low"),
    ],
)
def test_cap_takes_the_lower_label(label: str, ceiling: str | None, out: str) -> None:
    assert cap(label, ceiling) == out  # type: ignore[arg-type]


def test_the_probability_is_a_logistic_of_the_standardised_features() -> None:
    model = EvidenceModel(
        intercept=-1.0, weights={"title": 2.0}, center={"title": 0.5}, scale={"title": 0.25}
    )
    got = model.probability({"title": 1.0})
    assert got == pytest.approx(1 / (1 + math.exp(-(-1.0 + 2.0 * (1.0 - 0.5) / 0.25))))


def test_a_model_rejects_unknown_features_and_unordered_thresholds() -> None:
    with pytest.raises(ValueError, match="unknown"):
        EvidenceModel(intercept=0.0, weights={"rank_relative_to_best": 1.0})
    with pytest.raises(ValueError, match="floor"):
        EvidenceModel(intercept=0.0, weights={}, floor=0.5, med=0.3, high=0.9)


def test_features_are_absolute_against_the_pool_background() -> None:
    bg = Background.of([0.0, 1.0, 2.0, 3.0], [0.1, 0.2, None, 0.3])
    c = replace(cand(1, None), bm25=3.0, dense=0.3, coverage=0.4, rare_idf=math.e - 1, rare_count=0)
    f = features_of(c, 0, bg)
    assert f["bm25_z"] == pytest.approx((3.0 - 1.5) / np.std([0, 1, 2, 3]))
    assert f["dense_z"] == pytest.approx((0.3 - 0.2) / np.std([0.1, 0.2, 0.3]))
    assert (f["rank"], f["coverage"], f["rare_idf"], f["pool"]) == (0.0, 0.4, pytest.approx(1.0), math.log(4))
    # a pool where every ADR scores alike puts nobody above the background
    flat = features_of(c, 2, Background.of([1.0, 1.0], [0.2, 0.2]))
    assert flat["bm25_z"] == 0.0 and flat["dense_z"] == 0.0 and flat["rank"] == pytest.approx(math.log(3))


def test_the_same_scores_mean_more_above_a_quiet_background() -> None:
    """The point of the calibration: a hit that stands out of its pool is likelier related than the
    same relative rank in a pool where everything scores alike."""
    top = replace(cand(1, None), bm25=10.0, dense=0.6, coverage=0.3, title_match=0.0)
    loud = Background.of([9.0, 9.5, 10.0, 8.5], [0.55, 0.6, 0.58, 0.57])
    quiet = Background.of([0.5, 1.0, 10.0, 0.2], [0.1, 0.15, 0.6, 0.12])
    p_loud = DEFAULT_EVIDENCE.probability(features_of(top, 0, loud))
    p_quiet = DEFAULT_EVIDENCE.probability(features_of(top, 0, quiet))
    assert p_quiet > p_loud


def test_assess_leaves_a_cross_language_slot_unscored() -> None:
    ranked = [
        cand(1, None),
        replace(cand(2, None), cross_language=True),
    ]
    out = assess(
        ranked, Background.of([1.0, 0.0], [0.5, 0.1]), DEFAULT_EVIDENCE, unscored=frozenset({"0002-x.md"})
    )
    assert out[0].evidence is not None and out[1].evidence is None


def test_the_ranking_leaves_its_cross_language_slots_unscored() -> None:
    """fusion.rank names the slots it filled; assess leaves exactly those unscored."""
    ja = parse_adr("0002-ja.md", "# ADR-0002 キャッシュ\n\n## 決定\nキャッシュを使う。\n".encode())
    en = parse_adr("0001-en.md", b"# ADR-0001 Cache\n\n## Decision\nWe cache.\n")
    scores = [
        DocScores(adr=en, dense=0.6, bm25=3.0, title=0.5),
        DocScores(adr=ja, dense=0.0, bm25=0.0, cross_language=True, cross_language_score=0.9),
    ]
    params = FusionParams(cross_language_slots=1, cross_language_gate=0.5, evidence=DEFAULT_EVIDENCE)
    ranked = rank(scores, params).candidates
    by_path = {c.adr.path: c for c in ranked}
    assert by_path["0002-ja.md"].evidence is None and by_path["0001-en.md"].evidence is not None


def test_links_from_the_proposal_by_id_or_file_name() -> None:
    proposal = parse_adr(
        "0009-p.md",
        b"# ADR-0009 P\n\n## Context\nBuilds on ADR-2 and [the cache](0003-cache.md).\n",
    )
    ranked = [
        cand(1, 0.0),
        cand(2, 0.0),
        replace(cand(3, 0.0), adr=parse_adr("0003-cache.md", b"# ADR-0003 Cache\n")),
    ]
    assert linked_paths(proposal, ranked) == frozenset({"0002-x.md", "0003-cache.md"})


def test_function_words_carry_no_rare_term_weight() -> None:
    """An English query against a Japanese pool: "the" is in one ADR only, and must not count."""
    texts = ["決定: the キャッシュ を 使う", "決定: ログ は 保持 しない", "決定: 認証 は OIDC"]
    lex = LexicalIndex(texts).scores("the the the the OIDC")
    assert lex.rare_count is not None and lex.rare_idf is not None and lex.coverage is not None
    assert lex.rare_count.tolist() == [0, 0, 1]  # only OIDC, in the third
    assert lex.rare_idf[0] == 0.0 and lex.coverage[0] == 0.0
    assert lex.coverage[2] == pytest.approx(1.0)  # OIDC is the query's whole content


def test_in_a_pool_of_the_other_language_function_words_carry_no_bm25_weight() -> None:
    """One Japanese ADR quotes some English; an English query that repeats "the" must not make it the
    top hit of a Japanese pool (issue 24: it was, for 7 of 10 English proposals)."""
    texts = [
        "キャッシュ の 決定: the cache is the default for the team",
        "認証 は OIDC を 使う。トークン は 短命。",
        "ログ は 保持 しない",
        "デプロイ は 毎日",
    ]
    index = LexicalIndex(texts)
    query = "the the the the the OIDC token"
    naive = index.scores(query).bm25
    aware = index.scores(query, foreign_pool=True).bm25
    assert int(np.argmax(naive)) == 0  # the repeated article wins without the rule
    assert int(np.argmax(aware)) == 1  # the ADR about OIDC wins with it
    assert aware[1] == pytest.approx(naive[1])  # content terms keep their weight
