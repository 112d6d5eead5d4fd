"""Embedding functions: the offline hashed n-gram embedder, names, Chroma registration, failures."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from chromadb.utils.embedding_functions import config_to_embedding_function, known_embedding_functions

from adr_review.adapters.embeddings import (
    EmbeddingError,
    HashedNgramEmbedder,
    OfflineHashEmbedding,
    canonical_name,
    embed_texts,
    embedding_for,
    fingerprint,
    label_of,
)
from adr_review.adapters.embeddings_chroma import (
    OfflineHashEmbeddingFunction,
    SentenceTransformersEmbeddingFunction,
    chroma_function,
    make_embedding_function,
)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_vectors_are_deterministic_unit_length_and_of_the_configured_size() -> None:
    emb = HashedNgramEmbedder(dim=512)
    a = emb.embed(["Use Kafka for domain events", "ドメインイベントに Kafka を使う"])
    b = HashedNgramEmbedder(dim=512).embed(["Use Kafka for domain events", "ドメインイベントに Kafka を使う"])
    assert a.shape == (2, 512) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)


def test_similar_texts_are_closer_than_unrelated_ones() -> None:
    emb = HashedNgramEmbedder()
    base, near, far = emb.embed(
        [
            "Publish domain events on Kafka topics, one topic per aggregate",
            "Domain events are published to a Kafka topic per aggregate",
            "Record architecture decisions in markdown files",
        ]
    )
    assert cos(base, near) > cos(base, far) + 0.2
    ja = emb.embed(["ドメインイベントを配信する", "ドメインイベントの配信方式", "データベースの選定"])
    assert cos(ja[0], ja[1]) > cos(ja[0], ja[2])


def test_hiragana_only_ngrams_do_not_make_unrelated_japanese_similar() -> None:
    texts = ["データベースをすることにしている", "キャッシュをすることにしている"]
    kept = HashedNgramEmbedder(drop_hiragana_only=False).embed(texts)
    dropped = HashedNgramEmbedder().embed(texts)
    assert cos(dropped[0], dropped[1]) < cos(kept[0], kept[1])


def test_case_and_width_are_normalised() -> None:
    emb = HashedNgramEmbedder()
    a, b = emb.embed(["KAFKA Events", "ｋａｆｋａ events"])
    assert cos(a, b) == pytest.approx(1.0, abs=1e-6)


def test_empty_text_is_the_zero_vector() -> None:
    assert not HashedNgramEmbedder().embed_one("  ").any()


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        (None, "offline-hash"),
        ("offline-hash", "offline-hash"),
        ("offline", "offline-hash"),
        ("default", "default"),
        ("onnx-minilm", "default"),
        (
            "sentence-transformers:intfloat/multilingual-e5-small",
            "sentence-transformers:intfloat/multilingual-e5-small",
        ),
        ("sentence-transformers: /models/e5 ", "sentence-transformers:/models/e5"),
    ],
)
def test_embedding_names(name: str | None, canonical: str) -> None:
    assert canonical_name(name) == canonical


@pytest.mark.parametrize("name", ["sentence-transformers:", "openai", "minilm"])
def test_unknown_embedding_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError):
        canonical_name(name)


def test_functions_are_registered_with_chroma_and_rebuild_from_their_config() -> None:
    ef = make_embedding_function("offline-hash")
    assert known_embedding_functions["adr_review_offline_hash"] is OfflineHashEmbeddingFunction
    assert (
        known_embedding_functions["adr_review_sentence_transformers"] is SentenceTransformersEmbeddingFunction
    )
    rebuilt = config_to_embedding_function({"name": ef.name(), "config": ef.get_config()})
    np.testing.assert_array_equal(embed_texts(rebuilt, ["x y z"]), embed_texts(ef, ["x y z"]))
    assert not ef.is_legacy()
    assert label_of(ef) == "offline-hash"
    st = make_embedding_function("sentence-transformers:some/model")
    assert label_of(st) == "sentence-transformers:some/model"
    assert (
        config_to_embedding_function({"name": st.name(), "config": st.get_config()}).get_config()
        == st.get_config()
    )
    assert label_of(make_embedding_function("default")) == "default"


@pytest.mark.parametrize("name", ["offline-hash", "sentence-transformers:some/model"])
def test_the_collections_function_is_the_embedder_chroma_side_alike(name: str) -> None:
    """The index embeds queries with the chromadb-free embedder and stores chunks through Chroma's
    wrapper: both must name the same vectors (fingerprint) and, for the offline one, give them."""
    plain = embedding_for(name)
    wrapped = chroma_function(plain)
    assert (fingerprint(wrapped), label_of(wrapped)) == (fingerprint(plain), label_of(plain))
    assert chroma_function(wrapped) is wrapped
    if name == "offline-hash":
        np.testing.assert_array_equal(embed_texts(wrapped, ["x y z"]), embed_texts(plain, ["x y z"]))
    assert fingerprint(chroma_function(OfflineHashEmbedding(dim=16))) == fingerprint(
        OfflineHashEmbedding(dim=16)
    )


def test_fingerprint_changes_with_the_configuration() -> None:
    a = OfflineHashEmbeddingFunction()
    b = OfflineHashEmbeddingFunction(dim=1024)
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a) == fingerprint(OfflineHashEmbeddingFunction())


def test_a_model_that_cannot_load_raises_embedding_error_only_when_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    ef = make_embedding_function("sentence-transformers:some/model")  # constructing loads nothing
    with pytest.raises(EmbeddingError, match="pip install"):
        embed_texts(ef, ["text"])


def test_any_runtime_failure_becomes_embedding_error() -> None:
    class Boom(OfflineHashEmbeddingFunction):
        def __call__(self, input):  # type: ignore[no-untyped-def]
            raise OSError("model file truncated")

    with pytest.raises(EmbeddingError, match="truncated"):
        embed_texts(Boom(), ["text"])
