"""Hostile values in an ADR file: every conversion of what the parser read is bounded, and anything
it cannot read is an AdrParseError for that file (issue 26, items 10 and 11)."""

from __future__ import annotations

import threading
import unicodedata

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import adr_review.core.adr.parse as parse_module
from adr_review.core.adr import AdrParseError, canonical_id_key, fold_id, parse_adr
from adr_review.core.serde import to_dict
from adr_review.core.text import (
    MAX_NON_STARTERS,
    cap_non_starters,
    nfkc,
    normalize,
    normalize_for_match,
    token_form,
)

HANG_DEADLINE_S = 60.0  # a hang detector, not a budget: the capped work takes milliseconds

HEX = "0x" + "f" * 4_000  # 16,000 bits: past CPython's 4,300 decimal digits once printed

# A front matter line each; PyYAML builds these ints without CPython's digit guard.
HUGE_INTEGERS = {
    "hex tags": f"tags: {HEX}",
    "hex key": f"? {HEX}\n: a",
    "octal": "tags: 0o" + "7" * 5_000,
    "yaml 1.1 octal": "tags: 0" + "7" * 5_000,
    "binary": "tags: 0b" + "1" * 20_000,
    "base 60": "tags: 1" + ":59" * 3_000,
    "decimal": "tags: " + "9" * 5_000,
    "in a list": f"supersedes: [{HEX}]",
    "in a mapping": f"owner: {{team: {HEX}}}",
    "title": f"title: {HEX}",
    "status": f"status: {HEX}",
    "date": f"date: {HEX}",
    "id of 5,000 digits": "id: ADR-" + "1" * 5_000,
    "id of 4,000 digits": "id: ADR-" + "1" * 4_000,
    "bare id of 5,000 digits": "id: " + "1" * 5_000,
}


@pytest.mark.parametrize("name", sorted(HUGE_INTEGERS))
def test_a_huge_front_matter_integer_is_read_as_text(name: str) -> None:
    text = f"---\n{HUGE_INTEGERS[name]}\n---\n# ADR-0007: Use queues\n\n## Decision\nWe use queues.\n"
    adr = parse_adr("0007-use-queues.md", text.encode())
    # Every value the parse produced converts to text and to the parse cache's JSON.
    assert orjson.loads(orjson.dumps(to_dict(adr)))["path"] == "0007-use-queues.md"
    assert repr(adr) and all(str(v) for v in adr.extra.values())
    assert adr.number is None or adr.number.bit_length() < 64


def test_the_huge_tags_value_is_kept_as_written() -> None:
    adr = parse_adr("0007-x.md", f"---\ntags: {HEX}\n---\n# Use queues\n".encode())
    assert adr.extra["tags"] == HEX


def test_a_conversion_the_parser_did_not_bound_is_a_per_file_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")

    monkeypatch.setattr(parse_module, "find_links", refuse)
    with pytest.raises(AdrParseError) as err:
        parse_adr("0007-x.md", b"# Use queues\n\nbody\n")
    assert err.value.path == "0007-x.md"
    assert "4300" not in err.value.reason and "ValueError" in err.value.reason


# --- item 11: NFKC on runs of combining marks -------------------------------------------------------

ALTERNATING = "\u0301\u0316"  # combining classes 230 and 220: NFKC must reorder every pair


def _longest_non_starter_run(text: str) -> int:
    longest = run = 0
    for ch in text:
        run = run + 1 if unicodedata.combining(ch) else 0
        longest = max(longest, run)
    return longest


@pytest.mark.parametrize(("marks", "kept"), [(0, 0), (1, 1), (30, 30), (31, 30), (1_000, 30), (450_000, 30)])
def test_a_run_of_combining_marks_keeps_at_most_the_cap(marks: int, kept: int) -> None:
    text = "x" + (ALTERNATING * marks)[:marks] + " end"
    assert _longest_non_starter_run(cap_non_starters(text)) == kept
    assert _longest_non_starter_run(nfkc(text)) == kept
    assert nfkc(text).endswith(" end")


def test_every_nfkc_of_untrusted_text_is_the_capped_one() -> None:
    """normalize(), normalize_for_match() and token_form() (the BM25 terms' and the offline embedding's
    fold) all cap first: 450,000 marks (a 900 kB past ADR) finish long before the hang detector's
    deadline (minutes uncapped)."""
    text = "x" + ALTERNATING * 225_000
    results: list[str] = []

    def work() -> None:
        results.extend([normalize(text), normalize_for_match(text), token_form(text)])

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(HANG_DEADLINE_S)
    assert not worker.is_alive(), f"NFKC of 450,000 marks still running after {HANG_DEADLINE_S} s"
    assert len(results) == 3  # an exception in the thread leaves none
    assert all(_longest_non_starter_run(r) == MAX_NON_STARTERS for r in results)


_MARKED = st.text(
    alphabet=st.sampled_from(
        ["a", "e", "ｶ", "ﾞ", "ａ", "\u0301", "\u0316", "\u0308", "\u05b0", "\U0001d165", "。"]
    ),
    max_size=200,
)


@given(_MARKED)
@settings(max_examples=300, deadline=None)
def test_nfkc_is_plain_nfkc_wherever_no_run_reaches_the_cap(text: str) -> None:
    capped = cap_non_starters(text)
    assert _longest_non_starter_run(capped) <= MAX_NON_STARTERS
    if _longest_non_starter_run(text) <= MAX_NON_STARTERS:
        assert capped == text
        assert nfkc(text) == unicodedata.normalize("NFKC", text)


# --- items 13 and 14: one folding of ids ------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "shown", "key"),
    [
        ("ADR-0001", "ADR-0001", "ADR-1"),
        ("ADR-0\u2060001", "ADR-0001", "ADR-1"),  # word joiner
        ("ADR-\u200b0001\ufeff", "ADR-0001", "ADR-1"),  # zero-width space, BOM
        ("AD\u00adR-0001", "ADR-0001", "ADR-1"),  # soft hyphen
        ("ＡＤＲ-０００４", "ADR-0004", "ADR-4"),
        ("ADR\u20130777", "ADR-0777", "ADR-777"),  # en dash
        ("ADR\u20110444", "ADR-0444", "ADR-444"),  # non-breaking hyphen
        ("ADR 0999", "ADR-0999", "ADR-999"),
        ("adr-20260320-01", "ADR-20260320-01", "ADR-20260320-1"),
    ],
)
def test_a_front_matter_id_is_folded_before_it_is_shown_or_compared(
    written: str, shown: str, key: str
) -> None:
    adr = parse_adr("x.md", f"---\nid: {written}\n---\n# Use queues\n".encode())
    assert adr.adr_id == shown
    assert canonical_id_key(written) == canonical_id_key(shown) == key
    assert fold_id(adr.adr_id) == adr.adr_id  # what is shown is already folded
