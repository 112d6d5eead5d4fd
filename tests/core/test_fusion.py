"""Hybrid ranking: normalised fusion, the OR-gate, fill-ins, MMR, and one empty reason."""

from __future__ import annotations

from dataclasses import replace

import pytest

from adr_review.core.adr import Adr, parse_adr
from adr_review.core.fusion import DocScores, FusionParams, empty_result, fuse, mmr, qualify, rank
from adr_review.core.results import Candidate


def adr(n: int, title: str | None = None) -> Adr:
    return parse_adr(
        f"{n:04d}-doc.md", f"# {n}. {title or f'Decision {n}'}\n\n## Context\n\nText {n}.\n".encode()
    )


def doc(n: int, dense: float | None, bm25: float, title: float = 0.0) -> DocScores:
    return DocScores(adr=adr(n), dense=dense, bm25=bm25, title=title)


PARAMS = FusionParams(dense_weight=0.25, title_weight=0.2, qualify_cosine=0.5, qualify_bm25_rel=0.4)


def test_fused_score_is_the_convex_combination_of_normalised_channels() -> None:
    scores = [doc(1, 0.9, 10.0, 0.5), doc(2, 0.5, 5.0, 0.0), doc(3, 0.1, 0.0, 1.0)]
    by_id = {c.adr.path: c for c in fuse(scores, PARAMS)}
    # bm25/top, min-max dense, title as is
    assert by_id["0001-doc.md"].fused == pytest.approx(0.55 * 1.0 + 0.25 * 1.0 + 0.2 * 0.5)
    assert by_id["0002-doc.md"].fused == pytest.approx(0.55 * 0.5 + 0.25 * 0.5 + 0.0)
    assert by_id["0003-doc.md"].fused == pytest.approx(0.0 + 0.0 + 0.2 * 1.0)
    assert by_id["0002-doc.md"].bm25_rel == pytest.approx(0.5)
    assert [c.adr.path for c in fuse(scores, PARAMS)] == ["0001-doc.md", "0002-doc.md", "0003-doc.md"]


def test_without_dense_the_lexical_weights_are_renormalised() -> None:
    scores = [doc(1, None, 10.0, 0.0), doc(2, None, 5.0, 1.0)]
    fused = {c.adr.path: c for c in fuse(scores, PARAMS, dense_failed=True)}
    assert fused["0001-doc.md"].fused == pytest.approx(0.55 / 0.75)
    assert fused["0002-doc.md"].fused == pytest.approx((0.55 * 0.5 + 0.2) / 0.75)
    assert all(c.dense is None for c in fused.values())


def test_a_strong_lexical_lead_survives_fusion_where_rank_fusion_would_tie() -> None:
    # Doc 1: far ahead lexically, slightly behind in dense. RRF would rank them equal (1st + 2nd each).
    scores = [doc(1, 0.50, 40.0), doc(2, 0.52, 4.0), doc(3, 0.10, 1.0)]
    assert fuse(scores, PARAMS)[0].adr.path == "0001-doc.md"


@pytest.mark.parametrize(
    ("dense", "bm25_rel", "qualified", "why_starts"),
    [
        (0.7, 0.1, True, "qualified: cosine 0.700 >= 0.5"),  # dense alone passes: lexical cannot veto
        (0.2, 0.6, True, "qualified: bm25 0.60 of top >= 0.4"),  # lexical alone passes
        (0.7, 0.6, True, "qualified: cosine 0.700 >= 0.5 and bm25"),
        (0.2, 0.1, False, "fill-in: cosine 0.200 < 0.5, bm25 0.10 of top < 0.4"),
        (None, 0.1, False, "fill-in: no dense score"),
        (None, 0.5, True, "qualified: bm25 0.50"),
        (0.2, 0.4, True, "qualified: bm25 0.40 of top >= 0.4"),  # exactly on the BM25 threshold
        (0.2, 0.39, False, "fill-in: cosine 0.200 < 0.5, bm25 0.39 of top < 0.4"),  # just below it
        (0.5, 0.1, True, "qualified: cosine 0.500 >= 0.5"),  # exactly on the cosine threshold
    ],
)
def test_qualification_is_an_or_gate(
    dense: float | None, bm25_rel: float, qualified: bool, why_starts: str
) -> None:
    c = Candidate(
        adr=adr(1), dense=dense, bm25=bm25_rel * 10, bm25_rel=bm25_rel, fused=0.3, qualified=False, why=""
    )
    judged = qualify(c, PARAMS)
    assert judged.qualified is qualified
    assert judged.why.startswith(why_starts)


def test_qualified_candidates_come_first_and_fill_ins_are_marked() -> None:
    # doc 3 out-scores doc 1 (title coverage) but passes neither gate: it may only fill in after doc 1.
    scores = [doc(1, 0.6, 2.0), doc(2, 0.3, 10.0), doc(3, 0.45, 3.0, title=1.0), doc(4, 0.1, 0.1)]
    assert [c.adr.path for c in fuse(scores, PARAMS)][:3] == ["0002-doc.md", "0003-doc.md", "0001-doc.md"]
    ranking = rank(scores, PARAMS, top_n=3)
    assert [c.adr.path for c in ranking.candidates] == ["0002-doc.md", "0001-doc.md", "0003-doc.md"]
    assert [c.qualified for c in ranking.candidates] == [True, True, False]
    assert ranking.empty_reason is None
    assert ranking.stats["fill_ins"] == 1


def test_none_qualified_still_returns_the_marked_fill_ins() -> None:
    scores = [doc(1, 0.2, 0.0, title=0.5), doc(2, 0.1, 0.0)]
    ranking = rank(scores, PARAMS)
    assert ranking.empty_reason == "none_qualified"
    assert ranking.candidates and not any(c.qualified for c in ranking.candidates)


@pytest.mark.parametrize(
    ("scores", "dense_failed", "reason"),
    [
        ([], False, "no_candidates"),
        ([doc(1, 0.0, 0.0), doc(2, -0.1, 0.0)], False, "no_candidates"),
        ([doc(1, None, 0.0), doc(2, None, 0.0)], True, "embedding_failed"),
        ([doc(1, 0.1, 0.0)], False, "none_qualified"),
        ([doc(1, None, 3.0)], True, None),  # lexical-only still answers; diagnostics say why
    ],
)
def test_exactly_one_empty_reason(scores: list[DocScores], dense_failed: bool, reason: str | None) -> None:
    assert rank(scores, PARAMS, dense_failed=dense_failed).empty_reason == reason


def test_top_n_cuts_the_list() -> None:
    scores = [doc(i, 0.9 - i / 100, 10.0 - i) for i in range(1, 30)]
    assert len(rank(scores, PARAMS, top_n=7).candidates) == 7


def test_mmr_trades_relevance_for_diversity() -> None:
    # 1 and 2 are near-duplicates; 3 is a little less relevant but different.
    cands = [
        Candidate(adr(1), 0.9, 9.0, 1.0, 1.0, True, ""),
        Candidate(adr(2), 0.9, 8.9, 0.99, 0.99, True, ""),
        Candidate(adr(3), 0.8, 8.0, 0.9, 0.9, True, ""),
    ]
    twins = {frozenset({"0001-doc.md", "0002-doc.md"})}

    def sim(a: Adr, b: Adr) -> float:
        return 0.95 if frozenset({a.path, b.path}) in twins else 0.1

    assert [c.adr.path for c in mmr(cands, sim, 1.0, 3)] == ["0001-doc.md", "0002-doc.md", "0003-doc.md"]
    assert [c.adr.path for c in mmr(cands, sim, 0.6, 3)] == ["0001-doc.md", "0003-doc.md", "0002-doc.md"]


def test_rank_applies_mmr_only_below_lambda_one() -> None:
    scores = [doc(1, 0.9, 10.0), doc(2, 0.9, 9.9), doc(3, 0.8, 8.0)]

    def sim(a: Adr, b: Adr) -> float:
        return 0.99 if {a.path, b.path} == {"0001-doc.md", "0002-doc.md"} else 0.0

    plain = rank(scores, PARAMS, similarity=sim)
    diverse = rank(scores, FusionParams(mmr_lambda=0.5, qualify_cosine=0.5), similarity=sim)
    assert [c.adr.path for c in plain.candidates][:2] == ["0001-doc.md", "0002-doc.md"]
    assert [c.adr.path for c in diverse.candidates][:2] == ["0001-doc.md", "0003-doc.md"]


@pytest.mark.parametrize(
    "kwargs",
    [{"dense_weight": -0.1}, {"dense_weight": 0.7, "title_weight": 0.4}, {"mmr_lambda": 1.5}, {"top_n": 0}],
)
def test_invalid_knobs_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        FusionParams(**kwargs)  # type: ignore[arg-type]


def test_empty_result_carries_the_reason_and_diagnostics() -> None:
    res = empty_result("empty_input", {"embedding": "offline-hash"})
    assert res.candidates == () and res.empty_reason == "empty_input"
    assert res.diagnostics["embedding"] == "offline-hash"


# --- cross-language slots -----------------------------------------------------------------------------


def xdoc(n: int, bm25: float, cross: bool, xl: float | None = None, dense: float = 0.45) -> DocScores:
    return DocScores(adr=adr(n), dense=dense, bm25=bm25, cross_language=cross, cross_language_score=xl)


def _mixed() -> list[DocScores]:
    """Six same-language documents with lexical hits; three in the other language, lexically invisible:
    a strong cross-language match (0.4), a weaker one (0.3) and one the channel did not score."""
    same = [xdoc(i, 20.0 - i, False) for i in range(1, 7)]
    return [
        *same,
        xdoc(7, 0.0, True, 0.4, dense=0.05),
        xdoc(8, 0.0, True, 0.3, dense=0.9),
        xdoc(9, 0.0, True),
    ]


def slots(n: int, gate: float = 0.0, rank_: int = 5, fill: float | None = None) -> FusionParams:
    return FusionParams(
        **{
            **PARAMS.__dict__,
            "cross_language_slots": n,
            "cross_language_rank": rank_,
            "cross_language_gate": gate,
            "cross_language_fill_gate": fill,
        }
    )


def paths(ranking: object) -> list[str]:
    return [c.adr.path[:4] for c in ranking.candidates]  # type: ignore[attr-defined]


def test_cross_language_slots_are_off_by_default() -> None:
    assert FusionParams().cross_language_slots == 0
    assert paths(rank(_mixed(), PARAMS, top_n=5)) == ["0001", "0002", "0003", "0004", "0005"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        # one slot: the best cross-language score enters at the head's end, nothing is dropped
        (slots(1), ["0001", "0002", "0003", "0004", "0007", "0005", "0006"]),
        # two slots: at most two same-language candidates move down, in order
        (slots(2), ["0001", "0002", "0003", "0007", "0008", "0004", "0005"]),
        # the gate: 0.3 < 0.35, so only one of two slots is used
        (slots(2, gate=0.35), ["0001", "0002", "0003", "0004", "0007", "0005", "0006"]),
        # nothing passes the gate: the ranking without slots
        (slots(2, gate=0.5), ["0001", "0002", "0003", "0004", "0005", "0006", "0008"]),
        # the slots lie within the first three places
        (slots(1, rank_=3), ["0001", "0002", "0007", "0003", "0004", "0005", "0006"]),
    ],
)
def test_slots_let_cross_language_scores_in_without_dropping_same_language_candidates(
    params: FusionParams, expected: list[str]
) -> None:
    ranking = rank(_mixed(), params, top_n=7)
    assert paths(ranking) == expected
    for c in ranking.candidates:
        if c.why.endswith("(cross-language slot)"):
            assert c.cross_language and c.qualified and "cross-language score" in c.why


def test_the_slot_reads_the_cross_language_score_not_the_cosine() -> None:
    # 0008 has the better n-gram cosine (0.9) but the lower cross-language score: 0007 gets the slot
    ranking = rank(_mixed(), slots(1), top_n=5)
    assert paths(ranking)[4] == "0007" and ranking.stats["cross_language_slotted"] == 1


def test_without_cross_language_scores_nothing_changes() -> None:
    unscored = [replace(s, cross_language_score=None) for s in _mixed()]
    assert paths(rank(unscored, slots(2), top_n=7)) == paths(rank(unscored, PARAMS, top_n=7))
    same_only = [s for s in _mixed() if not s.cross_language]
    assert paths(rank(same_only, slots(2), top_n=5)) == paths(rank(same_only, PARAMS, top_n=5))


def test_an_other_language_match_already_in_the_head_keeps_its_place() -> None:
    scores = [xdoc(1, 10.0, True, 0.5), *(xdoc(i, 10.0 - i, False) for i in range(2, 7))]
    assert paths(rank(scores, slots(1), top_n=5)) == paths(rank(scores, PARAMS, top_n=5))


def test_an_unqualified_fill_in_in_the_head_holds_its_slot_by_its_cross_language_score() -> None:
    # four same-language candidates, then a lexically weak other-language one as the fifth (a fill-in)
    scores = [*(xdoc(i, 20.0 - i, False) for i in range(1, 5)), xdoc(5, 1.0, True, 0.4, dense=0.1)]
    scores += [xdoc(6, 0.0, True, 0.3, dense=0.05), xdoc(7, 0.5, False, dense=0.1)]
    without = rank(scores, PARAMS, top_n=7)
    assert paths(without)[4] == "0005" and not without.candidates[4].qualified
    ranking = rank(scores, slots(2), top_n=7)
    assert paths(ranking) == ["0001", "0002", "0003", "0005", "0006", "0004", "0007"]
    assert ranking.stats["cross_language_slotted"] == 2 and ranking.stats["fill_ins"] == 1
    assert all(c.qualified for c in ranking.candidates[:5])


def test_slots_cannot_exceed_their_rank() -> None:
    with pytest.raises(ValueError):
        FusionParams(cross_language_slots=6, cross_language_rank=5)


def _with_fill_ins() -> list[DocScores]:
    """Three qualified same-language documents, three same-language fill-ins (below both relevance
    gates), and three other-language ones the lexical channels cannot see: 0.3, 0.25 and 0.1."""
    qualified = [xdoc(i, 20.0 - i, False) for i in range(1, 4)]
    fill_ins = [xdoc(i, 9.0 - i, False) for i in range(4, 7)]  # bm25 5, 4, 3 of 19: below 0.4
    other = [xdoc(7, 0.0, True, 0.3, dense=0.05), xdoc(8, 0.0, True, 0.25, dense=0.05)]
    return [*qualified, *fill_ins, *other, xdoc(9, 0.0, True, 0.1, dense=0.05)]


@pytest.mark.parametrize(
    ("params", "expected", "slotted"),
    [
        # no fill gate: neither passes the slot gate, nothing changes
        (slots(2, gate=0.35), ["0001", "0002", "0003", "0004", "0005", "0006", "0007"], 0),
        # both pass the fill gate: they take the two fill-ins' places, the fill-ins move down in order
        (slots(2, gate=0.35, fill=0.2), ["0001", "0002", "0003", "0007", "0008", "0004", "0005"], 2),
        # one passes: it takes the lowest-ranked fill-in's place
        (slots(2, gate=0.35, fill=0.28), ["0001", "0002", "0003", "0004", "0007", "0005", "0006"], 1),
        # one slot in all: the fill gate cannot add a second
        (slots(1, gate=0.35, fill=0.2), ["0001", "0002", "0003", "0004", "0007", "0005", "0006"], 1),
        # 0007 passes the slot gate and enters at the head's end; 0008 takes the fill-in place left
        (slots(2, gate=0.28, fill=0.2), ["0001", "0002", "0003", "0008", "0007", "0004", "0005"], 2),
        # a fill gate above the slot gate adds nothing
        (slots(2, gate=0.28, fill=0.3), ["0001", "0002", "0003", "0004", "0007", "0005", "0006"], 1),
    ],
)
def test_the_fill_gate_lets_a_weaker_cross_language_score_take_only_a_fill_ins_place(
    params: FusionParams, expected: list[str], slotted: int
) -> None:
    ranking = rank(_with_fill_ins(), params, top_n=7)
    assert paths(ranking) == expected
    assert ranking.stats.get("cross_language_slotted", 0) == slotted
    for c in ranking.candidates[:5]:
        if c.cross_language:
            assert c.qualified and c.why.endswith("(cross-language slot)")


def test_the_fill_gate_never_displaces_a_qualified_candidate() -> None:
    # every same-language candidate in the head is qualified: no fill-in place to take
    assert paths(rank(_mixed(), slots(2, gate=0.5, fill=0.0), top_n=7)) == paths(
        rank(_mixed(), slots(2, gate=0.5), top_n=7)
    )


def test_an_other_language_fill_in_holds_its_place_by_the_fill_gate() -> None:
    # four qualified same-language candidates, then an other-language fill-in (0.25) and a better one
    # outside the head (0.3): the head's only fill-in place goes to the better one
    scores = [*(xdoc(i, 20.0 - i, False) for i in range(1, 5)), xdoc(5, 1.0, True, 0.25, dense=0.1)]
    scores += [xdoc(6, 0.0, True, 0.3, dense=0.05), xdoc(7, 0.5, False, dense=0.1)]
    assert paths(rank(scores, PARAMS, top_n=7))[:5] == ["0001", "0002", "0003", "0004", "0005"]
    assert paths(rank(scores, slots(1, gate=0.5, fill=0.2), top_n=7))[:5] == [
        "0001",
        "0002",
        "0003",
        "0004",
        "0006",
    ]
    ranking = rank(scores, slots(2, gate=0.5, fill=0.2), top_n=7)  # two slots: it keeps its own
    assert paths(ranking)[:5] == ["0001", "0002", "0003", "0004", "0005"]
    assert ranking.candidates[4].qualified and "in a fill-in's place" in ranking.candidates[4].why


def test_with_no_document_in_the_query_language_the_channel_picks_lead() -> None:
    """A Japanese proposal over an English-only folder: the fused ranking has only stray English
    tokens to go on, so the strong cross-language picks come first, best first, then the rest in
    fused order; nothing is dropped."""
    scores = [
        xdoc(1, 9.0, True, 0.2),
        xdoc(2, 8.0, True, 0.7),
        xdoc(3, 7.0, True, 0.1),
        xdoc(4, 6.0, True, 0.9),
        xdoc(5, 5.0, True, 0.3),
        xdoc(6, 4.0, True, 0.8),
    ]
    ranking = rank(scores, slots(2, gate=0.6), top_n=6)
    assert paths(ranking) == ["0004", "0006", "0001", "0002", "0003", "0005"]
    assert ranking.stats["cross_language_slotted"] == 1  # 0004 was in the head on its own scores
    # one same-language document in scope: the picks wait at the head's end as before
    mixed = [*scores, xdoc(7, 1.0, False)]
    assert paths(rank(mixed, slots(2, gate=0.6), top_n=7))[3:5] == ["0004", "0006"]
