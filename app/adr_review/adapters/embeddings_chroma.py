"""The Chroma side of the embedding functions (embeddings.py): the same functions as chromadb
EmbeddingFunctions, registered by name so a collection reopens with its function. Imported only
where a collection is opened (index.py), because it imports chromadb.
"""

from __future__ import annotations

from typing import Any, cast

from chromadb.api.types import Documents, EmbeddingFunction, Space
from chromadb.utils.embedding_functions import register_embedding_function

from adr_review.adapters.embeddings import (
    Embedder,
    OfflineHashEmbedding,
    SentenceTransformersEmbedding,
    embedding_for,
)


class _NormalisedEmbeddingFunction(EmbeddingFunction[Documents]):
    """Both functions below return unit vectors, so a collection defaults to cosine distance."""

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]


@register_embedding_function
class OfflineHashEmbeddingFunction(OfflineHashEmbedding, _NormalisedEmbeddingFunction):
    """Chroma wrapper of HashedNgramEmbedder (name + config so a collection reopens without warnings)."""

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> OfflineHashEmbeddingFunction:
        return OfflineHashEmbeddingFunction(**config)


@register_embedding_function
class SentenceTransformersEmbeddingFunction(SentenceTransformersEmbedding, _NormalisedEmbeddingFunction):
    """sentence-transformers model by name or local path, as a collection's function."""

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> SentenceTransformersEmbeddingFunction:
        return SentenceTransformersEmbeddingFunction(
            model=str(config["model"]), device=str(config.get("device", "cpu"))
        )


def chroma_function(embedder: Embedder) -> EmbeddingFunction[Documents]:
    """The collection's function for an embedder of embeddings.py: the same name, config and vectors."""
    if isinstance(embedder, (OfflineHashEmbeddingFunction, SentenceTransformersEmbeddingFunction)):
        return embedder
    if isinstance(embedder, OfflineHashEmbedding):
        return OfflineHashEmbeddingFunction(**embedder.get_config())
    if isinstance(embedder, SentenceTransformersEmbedding):
        return SentenceTransformersEmbeddingFunction(model=embedder.model, device=embedder.device)
    return cast("EmbeddingFunction[Documents]", embedder)  # chromadb's own (its ONNX default)


def make_embedding_function(name: str | None) -> EmbeddingFunction[Documents]:
    """The Chroma embedding function for a configured name (embeddings.embedding_for). Loads nothing yet."""
    return chroma_function(embedding_for(name))
