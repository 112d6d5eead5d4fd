"""Extractive recall: the reason is always a verbatim slice; the best-matching sentence wins."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.core.adr import parse_adr
from app.core.extractive import (
    MAX_REASON_CHARS,
    best_sentence,
    pick_extractive,
    relevance_band,
    sentence_spans,
)
from app.core.results import Candidate
from app.core.text import contains_verbatim, tokenize


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two!  Three?", ["One.", "Two!", "Three?"]),
        ("Version 1.2 is fine. Next", ["Version 1.2 is fine.", "Next"]),
        ("監査ログを保存する。削除は年次。\n次の行", ["監査ログを保存する。", "削除は年次。", "次の行"]),
        ("  leading and trailing  \n\n", ["leading and trailing"]),
        ("", []),
    ],
)
def test_sentence_spans(text: str, sentences: list[str]) -> None:
    assert [text[a:b] for a, b in sentence_spans(text)] == sentences


@pytest.mark.parametrize(
    ("summary", "query", "expected"),
    [
        (
            "We adopt MADR for all records. Events are published to Kafka with per-tenant ordering.",
            "ordering of tenant events in Kafka",
            "Events are published to Kafka with per-tenant ordering.",
        ),
        (
            "認証はOIDCで行う。監査ログは七年間保存し、その後に削除する。",
            "監査ログの保存期間を決める",
            "監査ログは七年間保存し、その後に削除する。",
        ),
        # nothing in common: the first sentence (the decision's lead) is used
        ("First sentence here. Second one.", "zebra", "First sentence here."),
    ],
)
def test_best_sentence_picks_the_closest_and_is_verbatim(summary: str, query: str, expected: str) -> None:
    got = best_sentence(summary, set(tokenize(query)))
    assert got == expected
    assert got in summary


def test_long_sentences_are_cut_at_a_word_inside_the_summary() -> None:
    summary = "word " * 200 + "end."
    got = best_sentence(summary, {"word"})
    assert got is not None and len(got) <= MAX_REASON_CHARS and got in summary and not got.endswith(" ")


@pytest.mark.parametrize(
    ("score", "band"),
    [(1.0, "high"), (0.75, "high"), (0.6, "med"), (0.4, "med"), (0.39, "low"), (0.0, "low")],
)
def test_relevance_bands(score: float, band: str) -> None:
    assert relevance_band(score, 1.0, high=0.75, med=0.4) == band


def candidate(path: str, markdown: str, fused: float, qualified: bool = True) -> Candidate:
    adr = parse_adr(path, markdown.encode())
    return Candidate(
        adr=adr, dense=None, bm25=fused, bm25_rel=fused, fused=fused, qualified=qualified, why="test"
    )


def test_pick_extractive_uses_qualified_candidates_in_rank_order_up_to_the_limit() -> None:
    cands = [
        candidate("0001-a.md", "# ADR-0001 A\n\n## Decision\nKafka carries tenant events. Unrelated.\n", 1.0),
        candidate("0002-b.md", "# ADR-0002 B\n\n## Decision\nWe use Postgres.\n", 0.9, qualified=False),
        candidate("0003-c.md", "# ADR-0003 C\n\n## Decision\nTenant data is isolated.\n", 0.5),
        candidate("0004-d.md", "# ADR-0004 D\n\n## Decision\nLogs go to S3.\n", 0.2),
    ]
    picks = pick_extractive(cands, "Tenant events in Kafka", limit=2)
    assert [(p.candidate_index, p.relevance, p.reason) for p in picks] == [
        (0, "high", "Kafka carries tenant events."),
        (2, "med", "Tenant data is isolated."),
    ]
    for p in picks:
        assert contains_verbatim(cands[p.candidate_index].adr.summary, p.reason)


def test_a_candidate_without_summary_is_cited_with_a_proposal_sentence() -> None:
    c = candidate("0005-e.md", "# ADR-0005 Kafka retention\n", 1.0)
    bare = replace(c, adr=replace(c.adr, summary=""))
    proposal = "We choose Postgres. Kafka retention is seven days."
    picks = pick_extractive([bare], proposal)
    assert [(p.reason, p.quoted_from) for p in picks] == [("Kafka retention is seven days.", "proposal")]
