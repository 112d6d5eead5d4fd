"""The passages the cross-language channel embeds: what is kept, in which order, and how long."""

from __future__ import annotations

import pytest

from adr_review.core.adr import parse_adr
from adr_review.core.xl_units import adr_passages, passages_key, query_passages

ADR = """# ADR-0006: Log retention and personal data

* Status: accepted
* Date: 2024-09-02

## Context

Logs grew past 4 TB a month. Retention differed per service, the longest was unlimited.

## Decision

Application logs are kept for 30 days.

1. Names, addresses and phone numbers are never written to application logs.
2. Event buses and queues that carry personal data state their retention and deletion in an ADR.

## Consequences

Storage falls to a third. Investigations older than 30 days use audit logs only.
"""


def _adr(text: str = ADR):  # noqa: ANN202 - Adr
    return parse_adr("0006-log-retention.md", text.encode())


def test_title_then_decision_then_context_then_the_rest_without_metadata_lines() -> None:
    assert adr_passages(_adr()) == [
        "Log retention and personal data",
        "Application logs are kept for 30 days.",
        "Names, addresses and phone numbers are never written to application logs.",
        "Event buses and queues that carry personal data state their retention and deletion in an ADR.",
        "Logs grew past 4 TB a month. Retention differed per service, the longest was unlimited.",
        "Storage falls to a third. Investigations older than 30 days use audit logs only.",
    ]


@pytest.mark.parametrize(("limit", "count"), [(1, 1), (3, 3), (16, 6)])
def test_at_most_limit_passages(limit: int, count: int) -> None:
    got = adr_passages(_adr(), limit=limit)
    assert len(got) == count and got[0] == "Log retention and personal data"


@pytest.mark.parametrize("chars", [40, 60, 160])
def test_long_paragraphs_are_cut_at_sentence_ends_and_never_exceed_the_limit(chars: int) -> None:
    long = "Retention is 30 days. " * 12 + "個人情報を載せる場合は保持期間を明記する。" * 6
    got = query_passages(long, chars=chars)
    assert got and all(len(p) <= chars for p in got)
    if chars >= 60:  # every sentence fits: every passage ends at a sentence end
        assert all(p.endswith((".", "。")) for p in got)


def test_short_blocks_and_repeats_are_dropped() -> None:
    text = "# Adopt Kafka for orders\n\nGood.\n\nOrder events carry the delivery address.\n\nOrder events carry the delivery address.\n"
    assert query_passages(text) == ["Adopt Kafka for orders", "Order events carry the delivery address."]


def test_a_query_without_blocks_is_one_passage_and_an_empty_one_none() -> None:
    assert query_passages("short") == ["short"]
    assert query_passages("  ") == []


def test_the_key_names_what_is_embedded() -> None:
    assert passages_key() != passages_key(limit=8) != passages_key(chars=300)
