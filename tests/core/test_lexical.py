"""The lexical index: rank-bm25's Okapi scores, statistics of the pool, title coverage."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from adr_review.core.lexical import Bm25Params, LexicalIndex
from adr_review.core.text import search_tokens

TEXTS = [
    "Use PostgreSQL for the order service. PostgreSQL gives us transactions.",
    "Adopt Kafka for domain events between services; events are retained seven days.",
    "Record architecture decisions as markdown files in the repository.",
    "Replace the message broker: move domain events from Kafka to NATS JetStream.",
    "データベースには PostgreSQL を採用する。トランザクションが必要なため。",
    "イベント駆動アーキテクチャを採用し、Kafka でドメインイベントを配信する。",
]
TITLES = [
    "Use PostgreSQL",
    "Adopt Kafka",
    "Record decisions",
    "Move to NATS",
    "データベースの選定",
    "イベント駆動",
]
QUERIES = [
    "We keep domain events in Kafka but need a database with transactions",
    "ドメインイベントの配信方式を見直す",
    "markdown decisions",
]


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_matches_rank_bm25_on_the_whole_folder(query: str) -> None:
    index = LexicalIndex(TEXTS, TITLES)
    expected = BM25Okapi([search_tokens(t) for t in TEXTS]).get_scores(search_tokens(query))
    np.testing.assert_allclose(index.scores(query).bm25, expected, atol=1e-9)


@pytest.mark.parametrize("pool", [[0, 1, 2], [1, 3, 5], [0, 2, 3, 4, 5]])
def test_pool_statistics_equal_bm25_over_only_the_pool(pool: list[int]) -> None:
    query = QUERIES[0] + " " + QUERIES[1]
    index = LexicalIndex(TEXTS, TITLES)
    got = index.scores(query, pool).bm25
    expected = BM25Okapi([search_tokens(TEXTS[i]) for i in pool]).get_scores(search_tokens(query))
    np.testing.assert_allclose(got[pool], expected, atol=1e-9)
    outside = [i for i in range(len(TEXTS)) if i not in pool]
    assert not got[outside].any()


@pytest.mark.parametrize("vocabulary", [2**16 - 1, 2**16])  # with "shared": ids to 65535, to 65536
def test_bm25_matches_rank_bm25_on_either_side_of_a_16_bit_vocabulary(vocabulary: int) -> None:
    """Postings are sorted on 16-bit keys while the term ids fit (a radix sort), on the ids beyond."""
    words = [f"w{i:06d}" for i in range(vocabulary)]
    texts = [" ".join(words[d::7]) + " shared" * (d + 1) for d in range(7)]
    index = LexicalIndex(texts)
    assert len(index.vocab) == vocabulary + 1
    # the last document's last words: the terms numbered last, past 65,535 in the second case
    query = " ".join([words[3], words[vocabulary // 2], *texts[-1].split()[-12:]])
    expected = BM25Okapi([search_tokens(t) for t in texts]).get_scores(search_tokens(query))
    np.testing.assert_allclose(index.scores(query).bm25, expected, atol=1e-9)


def test_params_reach_the_formula() -> None:
    query = QUERIES[0]
    a = LexicalIndex(TEXTS, TITLES, Bm25Params(k1=1.2, b=0.3)).scores(query).bm25
    expected = BM25Okapi([search_tokens(t) for t in TEXTS], k1=1.2, b=0.3).get_scores(search_tokens(query))
    np.testing.assert_allclose(a, expected, atol=1e-9)


def test_title_coverage_is_the_idf_weighted_share_of_title_terms_in_the_query() -> None:
    index = LexicalIndex(TEXTS, TITLES)
    title = index.scores("We adopt Kafka everywhere").title
    assert title[1] == pytest.approx(1.0)  # "adopt" and "kafka" both present
    assert 0.0 < index.scores("kafka only").title[1] < 1.0
    assert title[0] == 0.0  # "use postgresql": neither term
    assert index.scores("データベースの選定を見直す").title[4] == pytest.approx(1.0)


def test_empty_query_pool_or_folder_scores_zero() -> None:
    index = LexicalIndex(TEXTS, TITLES)
    assert not index.scores("").bm25.any()
    assert not index.scores(QUERIES[0], []).bm25.any()
    empty = LexicalIndex([], [])
    assert empty.scores("anything").bm25.shape == (0,)
