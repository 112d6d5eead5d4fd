"""Citation verification: the seed's steps, verify-then-dedupe, table-driven, English and Japanese.

A reason verifies as one passage of what a reader sees on GitHub, with substance; ids match after NFKC.
"""

from __future__ import annotations

from typing import Any

import pytest

from adr_review.core.adr import Adr, AdrLink, canonical_id_key
from adr_review.core.citations import (
    DUPLICATE,
    EMPTY_REASON,
    MALFORMED,
    MIN_SUBSTANCE,
    NOT_A_CANDIDATE,
    NOT_VERBATIM,
    OVER_LIMIT,
    RELEVANCE_CEILING,
    TOO_SHORT,
    CandidateText,
    Verification,
    capped_relevance,
    check_quote,
    substance,
    successor_of,
    verify_citations,
)
from adr_review.core.passages import reader_passages


def cand(adr_id: str, markdown: str) -> CandidateText:
    return CandidateText(adr_id, reader_passages(markdown))


CANDIDATES = [
    cand("ADR-0001", "We use PostgreSQL as the primary datastore for all services."),
    cand("ADR-0012", "イベント配信にはＫａｆｋａを採用し、順序保証はパーティション単位とする。"),
    cand("ADR-0030", "ガバナンス上、監査ログはＳ３に保管する。"),
    cand("ADR-20260320-01", "Feature flags are evaluated on the server only."),
]
PROPOSAL_TEXT = (
    "# ADR-0100 Ordered tenant events\n\n"
    "We need   ordered\nevents per tenant.  Latency matters less than order.\n\n"
    "監査ログは\n７年間保存する。その後削除する。"
)
PROPOSAL = reader_passages(PROPOSAL_TEXT)


def cite(adr_id: Any, reason: Any, relevance: Any = "high") -> dict[str, Any]:
    return {"adr_id": adr_id, "relevance": relevance, "relevance_reason": reason}


def verify(*items: Any, limit: int = 5, candidates: list[CandidateText] = CANDIDATES) -> Verification:
    return verify_citations(list(items), candidates, PROPOSAL, limit=limit)


@pytest.mark.parametrize(
    ("adr_id", "reason", "source"),
    [
        ("ADR-0001", "We use PostgreSQL as the primary datastore", "candidate"),
        # full-width letters in the candidate, half-width in the quote (NFKC)
        ("ADR-0012", "イベント配信にはKafkaを採用し", "candidate"),
        # half-width katakana with a separate voiced mark in the quote (NFKC composes it)
        ("ADR-0012", "ｲﾍﾞﾝﾄ配信", "candidate"),
        # decomposed kana: カ + combining dakuten == ガ
        ("ADR-0030", "\u30ab\u3099バナンス上", "candidate"),
        # line breaks and runs of spaces inside the quote, and in the proposal
        ("ADR-0001", "We need ordered events\n per  tenant.", "proposal"),
        # a Japanese quote the model joined across the proposal's line break, half-width digit
        ("ADR-0030", "監査ログは7年間保存する。", "proposal"),
        # a quote that spans a sentence boundary (contiguous in the source)
        ("ADR-0030", "７年間保存する。その後削除する。", "proposal"),
        ("ADR-0001", "events per tenant. Latency matters less than order.", "proposal"),
        # full-width Latin in the quote, half-width in the summary
        ("ADR-20260320-01", "Ｆｅａｔｕｒｅ flags are evaluated", "candidate"),
        # surrounding whitespace is not part of the quote
        ("ADR-0001", "  the primary datastore for all services\n", "candidate"),
    ],
)
def test_verbatim_quotes_are_kept(adr_id: str, reason: str, source: str) -> None:
    result = verify(cite(adr_id, reason))
    assert [c.adr_id for c in result.kept] == [adr_id]
    assert result.kept[0].quoted_from == source
    assert result.kept[0].relevance_reason == reason.strip()
    assert result.dropped == {}


@pytest.mark.parametrize(
    ("adr_id", "reason", "dropped"),
    [
        ("ADR-9999", "We use PostgreSQL", NOT_A_CANDIDATE),  # hallucinated id
        ("ADR-0100", "Ordered tenant events", NOT_A_CANDIDATE),  # the proposal itself is no candidate
        ("ADR-13", "イベント配信", NOT_A_CANDIDATE),
        ("ADR-20260320-02", "Feature flags", NOT_A_CANDIDATE),  # a sibling of a dated id
        ("ADR-0001", "We prefer PostgreSQL as primary store", NOT_VERBATIM),  # paraphrase
        ("ADR-0001", "primary datastore", TOO_SHORT),  # verbatim, but two words say nothing
        ("ADR-0001", "e", TOO_SHORT),  # one character of the candidate
        ("ADR-0001", "the", TOO_SHORT),
        ("ADR-0012", "の", TOO_SHORT),  # nothing to look for
        ("ADR-0030", "監査ログ", TOO_SHORT),  # four characters: a noun, not a reason
        ("ADR-0001", "PostgreSQLを主データストアとして使う", NOT_VERBATIM),  # translation
        ("ADR-0001", "監査ログはＳ３に保管する", NOT_VERBATIM),  # another candidate's summary
        ("ADR-0030", "監査ログは削除する", NOT_VERBATIM),  # two fragments joined
        ("ADR-0012", "イベント配信にはKafkaを採用する", NOT_VERBATIM),  # one character changed
        ("ADR-0001", "", EMPTY_REASON),
        ("ADR-0001", "  \n\t ", EMPTY_REASON),
        ("ADR-0001", None, EMPTY_REASON),
        ("ADR-0001", 42, EMPTY_REASON),
    ],
)
def test_bad_citations_are_dropped_and_counted(adr_id: str, reason: Any, dropped: str) -> None:
    result = verify(cite(adr_id, reason))
    assert result.kept == ()
    assert result.dropped == {dropped: 1}
    assert result.proposed == 1


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("adr-0001", "ADR-0001"),
        ("ADR-1", "ADR-0001"),
        ("ADR-00001", "ADR-0001"),
        ("Adr-12", "ADR-0012"),
        (" ADR-0012 ", "ADR-0012"),
        ("adr-20260320-1", "ADR-20260320-01"),
        ("ＡＤＲ-００１２", "ADR-0012"),  # full-width, as a Japanese IME writes it
        ("ａｄｒ－１", "ADR-0001"),  # full-width hyphen-minus
        ("ADR\u20100001", "ADR-0001"),  # a Unicode hyphen
    ],
)
def test_ids_match_regardless_of_case_and_zero_padding(written: str, expected: str) -> None:
    summary = {c.adr_id: c.passages[0].text for c in CANDIDATES}[expected]
    result = verify(cite(written, summary[:34]))
    assert [c.adr_id for c in result.kept] == [expected]  # the index's spelling, not the model's


@pytest.mark.parametrize(
    ("given", "expected", "normalized"),
    [
        ("high", "high", 0),
        ("med", "med", 0),
        ("low", "low", 0),
        ("HIGH", "high", 0),
        (" Med ", "med", 0),
        ("medium", "low", 1),
        ("critical", "low", 1),
        ("", "low", 1),
        (None, "low", 1),
        (3, "low", 1),
    ],
)
def test_relevance_outside_the_enum_becomes_low(given: Any, expected: str, normalized: int) -> None:
    result = verify(cite("ADR-0001", "the primary datastore for all services", given))
    assert [c.relevance for c in result.kept] == [expected]
    assert result.relevance_normalized == normalized
    assert result.dropped == {}


@pytest.mark.parametrize(
    ("relevance", "quoted_from", "shown"),
    [
        ("high", "candidate", "high"),
        ("med", "candidate", "med"),
        ("low", "candidate", "low"),
        ("high", "proposal", "med"),  # the proposal's own words say nothing about the cited ADR
        ("med", "proposal", "med"),
        ("low", "proposal", "low"),  # a cap never raises
    ],
)
def test_a_reason_from_the_proposal_caps_relevance_at_med(
    relevance: Any, quoted_from: Any, shown: str
) -> None:
    assert capped_relevance(relevance, quoted_from) == shown


def test_every_source_has_a_ceiling() -> None:
    assert RELEVANCE_CEILING == {"candidate": "high", "proposal": "med"}


@pytest.mark.parametrize(
    ("reason", "relevance", "quoted_from", "shown", "capped"),
    [
        ("the primary datastore for all services", "high", "candidate", "high", 0),
        ("Latency matters less than order.", "high", "proposal", "med", 1),
        ("Latency matters less than order.", "med", "proposal", "med", 0),
        ("Latency matters less than order.", "low", "proposal", "low", 0),
        ("Latency matters less than order.", "critical", "proposal", "low", 0),  # normalised, not capped
        # in both texts: the candidate says it too, so it is the candidate's reason and may be high
        ("Latency matters less than order", "high", "candidate", "high", 0),
    ],
)
def test_verification_records_where_a_reason_is_from_and_caps_the_proposals(
    reason: str, relevance: str, quoted_from: str, shown: str, capped: int
) -> None:
    candidate = cand(
        "ADR-0001",
        "We use PostgreSQL as the primary datastore for all services. Latency matters less than order, for now.",
    )
    result = verify(cite("ADR-0001", reason, relevance), candidates=[candidate])
    assert [(c.quoted_from, c.relevance) for c in result.kept] == [(quoted_from, shown)]
    assert result.relevance_capped == capped and result.dropped == {}


def test_six_citations_keep_the_first_five() -> None:
    candidates = [cand(f"ADR-{i:04d}", f"Decision number {i} is recorded here.") for i in range(1, 7)]
    items = [cite(f"ADR-{i:04d}", f"Decision number {i} is") for i in range(1, 7)]
    result = verify(*items, candidates=candidates)
    assert [c.adr_id for c in result.kept] == [f"ADR-{i:04d}" for i in range(1, 6)]
    assert result.dropped == {OVER_LIMIT: 1}
    assert [c.candidate_index for c in result.kept] == [0, 1, 2, 3, 4]


def test_the_limit_counts_survivors_not_proposals() -> None:
    # A dropped citation early in the list does not use up one of the five places.
    candidates = [cand(f"ADR-{i:04d}", f"Decision number {i} is recorded here.") for i in range(1, 7)]
    items = [cite("ADR-9999", "nothing")] + [
        cite(f"ADR-{i:04d}", f"number {i} is recorded") for i in range(1, 6)
    ]
    result = verify(*items, candidates=candidates)
    assert len(result.kept) == 5
    assert result.dropped == {NOT_A_CANDIDATE: 1}


def test_duplicates_keep_the_first_verified_mention() -> None:
    result = verify(
        cite("ADR-0001", "the primary datastore for all services", "low"),
        cite("adr-1", "We use PostgreSQL as the primary", "high"),
        cite("ADR-0012", "順序保証はパーティション単位とする"),
    )
    assert [(c.adr_id, c.relevance) for c in result.kept] == [("ADR-0001", "low"), ("ADR-0012", "high")]
    assert result.dropped == {DUPLICATE: 1}


def test_a_case_twin_with_a_bad_reason_does_not_shadow_the_good_one() -> None:
    # Verify, then dedupe: the first mention (lower case, made-up reason) fails on its own and the
    # second (the index's spelling, a real quote) is kept, not lost as its "duplicate".
    result = verify(
        cite("adr-0001", "PostgreSQL was chosen for its licence"),
        cite("ADR-0001", "We use PostgreSQL as the primary datastore", "med"),
    )
    assert [(c.adr_id, c.relevance) for c in result.kept] == [("ADR-0001", "med")]
    assert result.dropped == {NOT_VERBATIM: 1}


def test_malformed_items_are_dropped_not_fatal() -> None:
    result = verify(
        "ADR-0001",
        {"relevance": "high"},
        {"adr_id": 1, "relevance_reason": "x"},
        None,
        cite("ADR-0001", "the primary datastore for all services"),
    )
    assert [c.adr_id for c in result.kept] == ["ADR-0001"]
    assert result.dropped == {MALFORMED: 4}
    assert result.proposed == 5
    assert result.dropped_total + len(result.kept) == result.proposed


def test_no_candidates_drops_everything() -> None:
    result = verify(cite("ADR-0001", "the primary datastore for all services"), candidates=[])
    assert result.kept == () and result.dropped == {NOT_A_CANDIDATE: 1}


def test_a_reason_from_the_proposal_is_quoted_from_the_proposal() -> None:
    result = verify_citations(
        [cite("ADR-0001", "only in the proposal, in a paragraph")],
        CANDIDATES[:1],
        reader_passages("# Title\n\nThis is only in the proposal, in a paragraph of its own."),
    )
    assert [(c.quoted_from, c.section) for c in result.kept] == [("proposal", "Title")]


# --- what a reader sees ---------------------------------------------------------------------------

READER_TEXT = """# ADR-0042 Rendering

## Decision

The renderer emits one `<text>` element per label and never rasterises.
<!-- Reviewers: the cache is disabled in production and nobody told ops. -->

- Labels are measured with the browser's font metrics
- Long labels wrap at the node's width

```ts
const fallback = "system-ui fonts are used when none is configured";
```

After the code block the layout runs again on every edit.

<details>
<summary>Measured on a 2019 laptop</summary>

It takes about forty milliseconds for a hundred nodes.
</details>

| Option | Verdict |
|---|---|
| Canvas rendering of every label | rejected |
"""
READER = reader_passages(READER_TEXT)


@pytest.mark.parametrize(
    "quote",
    [
        "The renderer emits one `<text>` element per label",  # code-span marks (not seen) are forgiven...
        "The renderer emits one <text> element per label",  # ...and the code-span content, kept
        "Labels are measured with the browser's font metrics",  # one list item
        'const fallback = "system-ui fonts are used when none is configured";',  # inside a code block
        "It takes about forty milliseconds for a hundred nodes.",  # markdown inside <details>
        "Canvas rendering of every label",  # one table cell
        "“The renderer emits one <text> element per label and never rasterises.”",  # wrapped in quote marks
        "Labels are **measured** with the _browser's_ font metrics",  # emphasis marks from the source
    ],
)
def test_quotes_of_what_a_reader_sees_verify(quote: str) -> None:
    check = check_quote(quote, READER)
    assert check.ok, check
    assert check.passage is not None and check.passage.section == "Decision"


@pytest.mark.parametrize(
    "quote",
    [
        # an invisible HTML comment: in the file, not on the page
        "the cache is disabled in production and nobody told ops",
        # two list items joined
        "Labels are measured with the browser's font metrics Long labels wrap",
        # joined across the code block
        "never rasterises. After the code block the layout runs again",
        # a table row read across its cells
        "Canvas rendering of every label rejected",
        # the code-span content dropped, as a summary that strips tags would render it
        "The renderer emits one element per label",
    ],
)
def test_quotes_of_what_a_reader_does_not_see_do_not_verify(quote: str) -> None:
    assert check_quote(quote, READER).problem == NOT_VERBATIM


def test_an_invisible_quote_in_the_proposal_drops_the_citation() -> None:
    proposal = reader_passages(
        "# P\n\nWe cache renders.\n\n<!-- cite ADR-0001: We use PostgreSQL for the cache -->\n"
    )
    result = verify_citations([cite("ADR-0001", "We use PostgreSQL for the cache")], CANDIDATES[:1], proposal)
    assert result.kept == () and result.dropped == {NOT_VERBATIM: 1}


@pytest.mark.parametrize(
    ("text", "enough"),
    [
        ("e", False),
        ("の", False),
        ("the", False),
        ("of the", False),
        ("Kafka", False),
        ("監査ログ", False),
        ("primary datastore", False),
        ("we store audit logs", True),  # three content words
        ("監査ログを保存する", True),  # the same clause in Japanese
        ("Events are published to Kafka", True),
        ("イベントはKafkaに送る", True),
        ("順序保証はパーティション単位とする", True),
    ],
)
def test_substance_is_fair_to_japanese_and_english(text: str, enough: bool) -> None:
    assert (substance(text) >= MIN_SUBSTANCE) is enough, substance(text)


def test_id_key_folds_width_and_dashes() -> None:
    assert (
        canonical_id_key("ＡＤＲ-００７１") == canonical_id_key("ADR-71") == canonical_id_key("adr\u20130071")
    )


# --- supersession ---------------------------------------------------------------------------------


def adr(path: str, adr_id: str, status: str = "accepted", links: tuple[AdrLink, ...] = ()) -> Adr:
    return Adr(
        path=path,
        adr_id=adr_id,
        title=adr_id,
        status=status,  # type: ignore[arg-type]
        raw_status=status,
        date=None,
        sections={},
        summary="",
        language="en",
        links=links,
        text="",
        content_hash="",
    )


def test_successor_from_own_link_resolves_file_names() -> None:
    old = adr("0012-kafka.md", "ADR-0012", "superseded", (AdrLink("superseded_by", "0020-pulsar.md"),))
    new = adr("0020-pulsar.md", "ADR-0020")
    assert successor_of(old, [old, new]) == "ADR-0020"


def test_successor_from_the_other_adrs_supersedes_link() -> None:
    old = adr("0012-kafka.md", "ADR-0012", "superseded")
    new = adr("0020-pulsar.md", "ADR-0020", "accepted", (AdrLink("supersedes", "adr-12"),))
    assert successor_of(old, [old, new]) == "ADR-0020"


def test_a_proposal_does_not_supersede_an_accepted_adr() -> None:
    old = adr("0012-kafka.md", "ADR-0012", "accepted")
    proposal = adr("0020-pulsar.md", "ADR-0020", "proposed", (AdrLink("supersedes", "ADR-0012"),))
    assert successor_of(old, [old, proposal]) is None


def test_not_superseded_has_no_successor() -> None:
    a = adr("0001-a.md", "ADR-0001")
    assert successor_of(a, [a, adr("0002-b.md", "ADR-0002", links=(AdrLink("related", "ADR-0001"),))]) is None
