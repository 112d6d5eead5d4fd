"""The dictionary views read back from their file (xl_dictionary.py): the passage matrix a recall
builds from the file's arrays as they lie, without cutting them per passage, is the one built from
the rows; after a sync that changes one ADR the rows path gives what a cold build gives."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from adr_review.adapters import array_file, gloss_lexicon, xl_dictionary
from adr_review.adapters.xl_dictionary import DictionaryViews
from adr_review.core import gloss
from adr_review.core.adr import Adr, parse_adr

TEXTS = {
    "0001-postgres.md": "# 1. Use PostgreSQL\n\nStatus: accepted\n\n## Decision\n\nOrders live in "
    "PostgreSQL.\n\nBackups run nightly and keep thirty days.\n\nReplicas serve the reports of the "
    "month.\n\nSchema changes ship with their migration scripts.\n",
    "0002-retention.md": "# 2. 個人情報の保持期間\n\nStatus: accepted\n\n## 決定\n\n住所と電話番号の保持期間は"
    "九十日とする。\n\n期間が過ぎたら削除する。\n",
    "0003-events.md": "# 3. Order events\n\nStatus: accepted\n\n## Decision\n\nOrder events carry the "
    "customer's address.\n\nConsumers state their retention period.\n",
}


@pytest.fixture
def lexicon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny prebuilt lexicon (the image's case), so the test needs no jamdict-data."""
    monkeypatch.setitem(sys.modules, "jamdict_data", None)
    monkeypatch.setattr(gloss_lexicon, "_LOADED", {})
    path = tmp_path / "jmdict-gloss.sqlite"
    words = {"個人情報": ["personal information"], "住所": ["address"], "電話番号": ["telephone number"]}
    gloss_lexicon._write(path, {**words, "保持": ["retention"], "期間": ["period"]}, "t1")
    monkeypatch.setenv(gloss_lexicon.PREBUILT, str(path))


def _adrs(texts: dict[str, str]) -> list[Adr]:
    return [parse_adr(p, t.encode()) for p, t in sorted(texts.items())]


def _equal(a: gloss.PassageMatrix, b: gloss.PassageMatrix) -> bool:
    return (
        all(
            np.array_equal(x, y) and x.dtype == y.dtype
            for x, y in zip(dataclasses.astuple(a)[:5], dataclasses.astuple(b)[:5], strict=True)
        )
        and a.n_docs == b.n_docs
    )


def _from_rows(views: DictionaryViews) -> gloss.PassageMatrix:
    order = sorted(views._rows)
    rows = [[(np.asarray(i), np.asarray(c)) for i, c in views._rows[p][2]] for p in order]
    return gloss.passage_matrix(rows, views.params)


def test_the_matrix_read_from_the_file_is_the_one_the_rows_give(tmp_path: Path, lexicon: None) -> None:
    DictionaryViews(tmp_path, "c").sync(_adrs(TEXTS))
    read = DictionaryViews(tmp_path, "c")  # another process: everything from the file
    assert read.holds({a.path: a.content_hash for a in _adrs(TEXTS)})
    assert read._flat is not None  # the file's arrays kept as they lie
    _order, matrix, _texts = read._passage_matrix()
    assert _equal(matrix, _from_rows(read))
    assert matrix.n_docs == 3 and len(matrix.owner) == sum(len(r[2]) for r in read._rows.values())
    assert len({len(r[2]) for r in read._rows.values()}) > 1  # ADRs of different lengths: owners differ


def test_after_a_sync_that_changes_one_adr_the_matrix_is_a_cold_builds(tmp_path: Path, lexicon: None) -> None:
    DictionaryViews(tmp_path / "warm", "c").sync(_adrs(TEXTS))
    changed = {**TEXTS, "0003-events.md": TEXTS["0003-events.md"] + "\nEvents are kept a year.\n"}
    warm = DictionaryViews(tmp_path / "warm", "c")
    assert warm.sync(_adrs(changed)) == 1 and warm._flat is None  # the rows, not the stale arrays
    cold = DictionaryViews(tmp_path / "cold", "c")
    cold.sync(_adrs(changed))
    assert _equal(warm._passage_matrix()[1], cold._passage_matrix()[1])
    query = "Order events carry the customer's address and telephone number"
    paths = [a.path for a in _adrs(changed) if a.language == "ja"]
    same = [a.path for a in _adrs(changed) if a.language != "ja"]
    assert warm.score(query, "en", paths, same) == cold.score(query, "en", paths, same)


def test_an_adrs_passages_and_texts_read_back_are_the_ones_glossed_and_behave_as_lists(
    tmp_path: Path, lexicon: None
) -> None:
    DictionaryViews(tmp_path, "c").sync(_adrs(TEXTS))
    read = DictionaryViews(tmp_path, "c")
    read._load()
    for path, adr in zip(sorted(TEXTS), _adrs(TEXTS), strict=True):
        _hash, _language, got, got_texts = read._rows[path]
        want, want_texts = xl_dictionary.adr_rows(adr, gloss_lexicon.load_lexicon() or {}, read.params)
        assert len(got) == len(want) > 0 and list(got_texts) == want_texts and len(got_texts) == len(want)
        for (gi, gc), (wi, wc) in zip(got, want, strict=True):
            assert np.array_equal(gi, wi) and np.array_equal(gc, wc)
            assert (gi.dtype, gc.dtype) == (np.int32, np.float32)  # a Sparse, though kept in 16 bits
        assert np.array_equal(got[-1][0], want[-1][0]) and len(got[:1]) == 1
        assert got_texts[-1] == want_texts[-1] and got_texts[np.int64(0)] == want_texts[0]
        assert got_texts[1:] == want_texts[1:]
        for rows in (got, got_texts):
            with pytest.raises(IndexError):
                rows[len(want)]
    _order, _matrix, texts = read._passage_matrix()
    assert list(texts) == [t for p in sorted(TEXTS) for t in read._rows[p][3]]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda a: {**a, "text": a["text"][:-3]}, id="text shorter than its ends"),
        pytest.param(lambda a: {**a, "values": a["values"][:-1]}, id="a value missing"),
        pytest.param(lambda a: {**a, "weights": a["weights"][:-1]}, id="weights of other dims"),
        pytest.param(lambda a: {k: v for k, v in a.items() if k != "text_ends"}, id="no text ends"),
    ],
)
def test_a_file_whose_arrays_disagree_is_ignored_and_glossed_again(
    tmp_path: Path, lexicon: None, damage: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
) -> None:
    views = DictionaryViews(tmp_path, "c")
    views.sync(_adrs(TEXTS))
    got = array_file.read_arrays(views.path, xl_dictionary.FORMAT, views.config)
    assert got is not None
    meta, arrays = got
    array_file.write_arrays(views.path, meta, "test", **damage(arrays))
    again = DictionaryViews(tmp_path, "c")
    assert not again.holds({a.path: a.content_hash for a in _adrs(TEXTS)})
    assert again.sync(_adrs(TEXTS)) == len(TEXTS)
    assert DictionaryViews(tmp_path, "c").holds({a.path: a.content_hash for a in _adrs(TEXTS)})


def test_a_file_of_the_previous_format_is_glossed_again(tmp_path: Path, lexicon: None) -> None:
    views = DictionaryViews(tmp_path, "c")
    views.sync(_adrs(TEXTS))
    got = array_file.read_arrays(views.path, xl_dictionary.FORMAT, views.config)
    assert got is not None
    meta, arrays = got
    array_file.write_arrays(views.path, {**meta, "format": "adr-review-xl-dict/2"}, "test", **arrays)
    assert DictionaryViews(tmp_path, "c").sync(_adrs(TEXTS)) == len(TEXTS)


@pytest.mark.parametrize(
    ("counts", "small"),
    [
        ([1.0, 2.0, 65535.0], True),
        ([], True),
        ([1.0, 65536.0], False),  # would wrap in 16 bits
        ([1.0, 2.5], False),  # a weighted count is kept as it is
    ],
)
def test_counts_are_kept_in_sixteen_bits_only_when_exact(counts: list[float], small: bool) -> None:
    assert xl_dictionary._small_whole(np.asarray(counts, dtype=np.float32)) is small
