"""The dictionary cross-language view (app/adr_review/core/gloss.py): segmentation, glossing, passage scores.
The lexicon here is a hand-written toy (a few JMdict-like entries), not JMdict."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adr_review.core import gloss as g

LEX = {
    "住所": ["address (e.g. of house)", "residence"],
    "電話番号": ["telephone number"],
    "電話": ["telephone call"],
    "保持": ["retention", "maintenance"],
    "期間": ["period", "term"],
    "無期限": ["indefinite"],
    "の": ["indicates possessive"],
    "と": ["and"],
    "キャッシュ": ["cache"],
}


@pytest.mark.parametrize(
    ("run", "words"),
    [
        ("住所と電話番号", ["住所", "電話番号"]),  # longest match: 電話番号 over 電話; no lone hiragana
        ("保持期間", ["保持", "期間"]),  # an unknown compound falls apart into known words
        ("未知住所", ["住所"]),  # unknown characters are skipped
        ("の", []),  # a lone hiragana is never a word
        ("", []),
    ],
)
def test_segment(run: str, words: list[str]) -> None:
    assert g.segment(run, LEX) == words


@pytest.mark.parametrize(
    ("text", "glosses", "words"),
    [
        ("住所と電話番号", 1, ["address", "telephone", "number"]),  # parentheses and hiragana dropped
        ("住所", 2, ["address", "residence"]),
        ("Redis の保持期間", 1, ["redis", "retention", "period"]),  # Latin words kept, first
        ("The cache", 1, ["cache"]),  # stop words dropped
    ],
)
def test_gloss_words(text: str, glosses: int, words: list[str]) -> None:
    assert g.gloss_words(text, LEX, glosses) == words


def test_passages_drop_fields_and_repeats() -> None:
    blocks = [
        ("plain", "Status: accepted"),
        ("paragraph", "Keep it."),
        ("heading", "Context"),
        ("paragraph", "Keep it."),
    ]
    assert g.passages(blocks, "Title") == ["Title", "Keep it."]


def _rows(passages: list[str], japanese: bool, params: g.GlossParams) -> list[g.Sparse]:
    return [g.sparse(v, params) for _p, v in g.views(passages, japanese, LEX, params)]


def test_the_japanese_passage_about_the_same_thing_scores_highest() -> None:
    params = g.GlossParams(glosses=1, min_terms=3, top_k=1, dims=1024)
    docs = [
        (["配送先住所と電話番号の保持期間は無期限", "キャッシュの保持"], True),
        (["キャッシュの保持期間", "キャッシュ"], True),
        (["The cache keeps sessions for a period"], False),
        ([], True),
    ]
    rows = [_rows(ps, ja, params) for ps, ja in docs]
    assert [len(r) for r in rows] == [1, 1, 1, 0]  # fewer than min_terms distinct words: left out
    m = g.passage_matrix(rows, params)
    s = g.document_scores(
        _rows(["Orders keep the phone number and address indefinitely."], False, params), m, params
    )
    assert s[0] > s[1] and s[0] > s[2]  # "phone" meets "telephone" through character 4-grams
    assert s[3] == 0.0  # a document without passages
    assert np.all((s >= 0) & (s <= 1.0 + 1e-6))


def test_top_k_is_the_mean_of_a_documents_best_passages() -> None:
    # three passages of one document; "period" occurs in every passage of the folder's other document
    # too, so the IDF differs by word: the expected cosines are computed here from the same formula
    params = g.GlossParams(min_terms=1, ngram=0, top_k=2, dims=64)
    doc = [g.sparse(w, params) for w in (["cache"], ["cache", "retention"], ["period"])]
    m = g.passage_matrix([doc], params)
    w = m.weights
    cache, retention = (w[g.sparse([x], params)[0][0]] for x in ("cache", "retention"))
    second = cache / np.sqrt(cache**2 + retention**2)  # "cache" against "cache retention"
    s = g.document_scores([g.sparse(["cache"], params)], m, params)
    assert s[0] == pytest.approx((1.0 + second) / 2, abs=1e-5)
    top1 = g.document_scores(
        [g.sparse(["cache"], params)], m, g.GlossParams(min_terms=1, ngram=0, top_k=1, dims=64)
    )
    assert top1[0] == pytest.approx(1.0, abs=1e-5)


def test_the_sparse_scores_equal_dense_tf_idf_cosines() -> None:
    params = g.GlossParams(min_terms=1, dims=256, top_k=1)
    texts = [
        ["retention", "period", "personal", "data"],
        ["cache", "entries", "expire"],
        ["data", "retention"],
    ]
    m = g.passage_matrix([[g.sparse(t, params)] for t in texts], params)
    dense = np.zeros((3, params.dims))
    for i, t in enumerate(texts):
        ids, counts = g.sparse(t, params)
        dense[i, ids] = (1 + np.log(counts)) * m.weights[ids]
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    q = np.zeros(params.dims)
    ids, counts = g.sparse(["personal", "data", "retention"], params)
    q[ids] = (1 + np.log(counts)) * m.weights[ids]
    q /= np.linalg.norm(q)
    got = g.document_scores([g.sparse(["personal", "data", "retention"], params)], m, params)
    np.testing.assert_allclose(got, dense @ q, atol=1e-5)


@pytest.mark.parametrize(
    ("scores", "same", "expected"),
    [
        ([0.5, 0.25, 0.1], [True, False, False], [1.0, 0.5, 0.2]),
        ([0.2, 0.4, 0.1], [True, True, False], [0.5, 1.0, 0.25]),  # over the best same-language one
        ([0.0, 0.3], [True, False], [0.0, 0.0]),  # the same-language one scored nothing: no measure
        ([0.3, 0.15], [False, False], [1.0, 0.5]),  # none in scope: over the best document's
        ([0.0], [False], [0.0]),
    ],
)
def test_scores_are_relative_to_the_best_same_language_document(
    scores: list[float], same: list[bool], expected: list[float]
) -> None:
    assert g.relative(scores, same) == pytest.approx(expected)


def test_the_best_passage_of_each_document_is_the_one_that_matched() -> None:
    params = g.GlossParams(min_terms=1, ngram=0, dims=4096)
    docs = [
        [g.sparse(["cache", "expiry"], params), g.sparse(["personal", "data", "retention"], params)],
        [g.sparse(["kafka", "topic"], params)],
        [],
    ]
    m = g.passage_matrix(docs, params)
    best = g.passage_scores([g.sparse(["retention", "personal"], params)], m, params)
    assert list(g.best_passage(best, m)) == [1, -1, -1]  # nothing matched in doc 1; doc 2 has no passage
    np.testing.assert_allclose(
        g.document_scores([g.sparse(["retention", "personal"], params)], m, params, best),
        g.document_scores([g.sparse(["retention", "personal"], params)], m, params),
    )


_JA_TEXT = st.text(
    alphabet=st.sampled_from("住所電話番号保持期間無期限のとキャッシュ未知 .AZaz0"), max_size=80
)


@settings(max_examples=200, deadline=None)
@given(_JA_TEXT)
def test_segmentation_takes_only_dictionary_words_in_order(run: str) -> None:
    words = g.segment(run, LEX)
    assert all(w in LEX for w in words) and "の" not in words and "と" not in words
    at = 0
    for w in words:  # each word is found after the previous one: nothing is read twice
        at = run.index(w, at) + len(w)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.booleans())
def test_any_text_gets_a_view_and_sparse_rows_without_error(text: str, japanese: bool) -> None:
    params = g.GlossParams(min_terms=1)
    for _passage, view in g.views([text], japanese, LEX, params):
        ids, counts = g.sparse(view, params)
        assert len(ids) == len(counts) and np.all(np.diff(ids) > 0) and np.all(counts >= 1)
        assert ids.min() >= 0 and ids.max() < params.dims
