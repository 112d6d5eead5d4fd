"""The cross-language channel: a second vector set of multilingual passage vectors beside the index.

The index's dense channel stays the character-n-gram embedding, which is the better same-language
channel (docs/benchmarks.md) but cannot match across scripts. This set (USE v3, the `multilingual`
extra) only feeds the fusion's cross-language slots (app/adr_review/core/fusion.py): it scores the documents in
another language than the query, never the fused score, so a query with no such document in scope
ranks exactly as without it.

What is embedded is chosen for speed: up to 16 short passages per ADR (app/adr_review/core/xl_units.py: the
title, then the decision's paragraphs and items, then the context's), at most 160 characters each
(the encoder's cost grows with the square of a text's length), once per content hash: the file
`xl-<collection>.arrays` keeps every ADR's vectors with its hash, and a sync embeds only the ADRs that
are new or changed. A document's score is the mean of its `top_k` best passage-pair cosines with the
query's passages, after each side is centred on the mean passage vector of its language in the
folder (the direction every text of one language shares is not content; removing it makes the two
languages' scores comparable). These choices and the fusion's slot count and gate were made on the
tuning half of the translated queries with the native ones; the other half is reported beside them
(benchmarks/bench_cross_language.py, docs/benchmarks.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from adr_review.adapters.array_file import SUFFIX, read_arrays, write_arrays
from adr_review.adapters.embeddings import USEM3, embed_texts, fingerprint, make_multilingual_function
from adr_review.core.adr import Adr
from adr_review.core.fusion import CrossLanguageMatch
from adr_review.core.xl_units import PASSAGE_CHARS, adr_passages, passages_key, query_passages

log = logging.getLogger("adr_review.index")

FORMAT = "adr-review-xl/1"


@dataclass(frozen=True)
class XlScoring:
    top_k: int = 3  # a document's score: the mean of its best k passage-pair cosines
    center: bool = True  # centre each side on its language's mean passage vector


class CrossLanguageVectors:
    """Passage vectors per ADR by content hash, and the cross-language score of a query against them."""

    def __init__(
        self, store_dir: Path, collection: str, scoring: XlScoring | None = None, model: str = USEM3
    ) -> None:
        self.path = Path(store_dir) / f"xl-{collection}{SUFFIX}"
        self.scoring = scoring or XlScoring()
        self.model = model
        self._ef = make_multilingual_function(model)
        self.config = f"{fingerprint(self._ef)}|{passages_key()}"
        self._paths: list[str] = []
        self._hashes: list[str] = []
        self._languages: list[str] = []
        self._offsets = np.zeros(1, dtype=np.int64)
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._row: dict[str, int] = {}
        self._means: dict[str, np.ndarray] = {}
        self._loaded = False

    # --- what is stored ------------------------------------------------------------------------

    def holds(self, hashes: Mapping[str, str]) -> bool:
        """Whether the file holds exactly these ADRs (path -> content hash), with this configuration."""
        self._load()
        return dict(zip(self._paths, self._hashes, strict=True)) == dict(hashes)

    def sync(self, adrs: Sequence[Adr]) -> int:
        """Embed the ADRs that are new or changed, drop the removed ones; returns how many were
        embedded. An EmbeddingError (the extra is missing, the model fails) leaves the file as it was."""
        self._load()
        stored = {
            p: (h, self._rows(i)) for i, (p, h) in enumerate(zip(self._paths, self._hashes, strict=True))
        }
        todo = [a for a in adrs if stored.get(a.path, ("",))[0] != a.content_hash]
        fresh: dict[str, np.ndarray] = {}
        if todo:
            units = [adr_passages(a) or [a.title or a.path] for a in todo]
            flat = embed_texts(self._ef, [u for us in units for u in us])
            cut = np.cumsum([0] + [len(us) for us in units])
            fresh = {a.path: flat[cut[i] : cut[i + 1]] for i, a in enumerate(todo)}
        if not todo and len(stored) == len(adrs):
            return 0
        rows = [
            (a.path, a.content_hash, a.language, fresh.get(a.path, stored.get(a.path, ("", None))[1]))
            for a in adrs
        ]
        self._set([(p, h, lang, v) for p, h, lang, v in sorted(rows) if v is not None])
        self._save()
        return len(todo)

    # --- scoring -------------------------------------------------------------------------------

    def score(
        self, query: str, language: str, paths: Sequence[str], same_paths: Sequence[str] = ()
    ) -> CrossLanguageMatch:
        """The cross-language score of every given (other-language) ADR the set holds (see the module
        doc; `same_paths` is not needed: centring makes the scores comparable). No passage texts are
        stored with the vectors, so no evidence: the extractive reason is found lexically. Raises
        EmbeddingError when the query cannot be embedded."""
        self._load()
        if not any(p in self._row for p in paths):
            return CrossLanguageMatch()
        return CrossLanguageMatch(self.score_vectors(self.query_vectors(query), language, paths))

    def query_vectors(self, query: str) -> np.ndarray:
        """The query's passage vectors (EmbeddingError when they cannot be made)."""
        return embed_texts(self._ef, query_passages(query) or [query[:PASSAGE_CHARS]])

    def score_vectors(
        self, query_vectors: np.ndarray, language: str, paths: Sequence[str], scoring: XlScoring | None = None
    ) -> dict[str, float]:
        """Scores from the query's passage vectors (`scores` without the embedding)."""
        self._load()
        how = scoring or self.scoring
        q = (
            _unit(query_vectors - self._means[language])
            if how.center and language in self._means
            else query_vectors
        )
        out = {}
        for p in paths:
            i = self._row.get(p)
            if i is None:
                continue
            d = self._rows(i)
            if how.center:
                d = _unit(d - self._means[self._languages[i]])
            sims = (q @ d.T).ravel()
            k = min(how.top_k, len(sims))
            out[p] = float(np.partition(sims, len(sims) - k)[len(sims) - k :].mean())
        return out

    # --- files ---------------------------------------------------------------------------------

    def _rows(self, i: int) -> np.ndarray:
        return self._vectors[int(self._offsets[i]) : int(self._offsets[i + 1])]

    def _set(self, rows: Sequence[tuple[str, str, str, np.ndarray]]) -> None:
        self._paths = [r[0] for r in rows]
        self._hashes = [r[1] for r in rows]
        self._languages = [r[2] for r in rows]
        self._offsets = np.concatenate([[0], np.cumsum([len(r[3]) for r in rows])]).astype(np.int64)
        self._vectors = (
            np.concatenate([r[3] for r in rows]).astype(np.float32) if rows else np.zeros((0, 0), np.float32)
        )
        self._row = {p: i for i, p in enumerate(self._paths)}
        self._means = {}
        for lang in set(self._languages):
            picked = [self._rows(i) for i, x in enumerate(self._languages) if x == lang]
            self._means[lang] = np.concatenate(picked).mean(axis=0)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        got = read_arrays(self.path, FORMAT, self.config)
        if got is None:
            return  # missing or unreadable: the next sync embeds everything again
        meta, z = got
        try:
            vectors, offsets = z["vectors"], z["offsets"]
            sizes = np.diff(offsets)
            rows = [
                (str(p), str(h), str(lang), vectors[int(lo) : int(lo) + int(n)])
                for p, h, lang, lo, n in zip(
                    meta["paths"], meta["hashes"], meta["languages"], offsets[:-1], sizes, strict=True
                )
            ]
        except (ValueError, KeyError, TypeError):
            return
        self._set(rows)

    def _save(self) -> None:
        meta = {
            "format": FORMAT,
            "config": self.config,
            "paths": self._paths,
            "hashes": self._hashes,
            "languages": self._languages,
        }
        write_arrays(self.path, meta, "cross-language vectors", vectors=self._vectors, offsets=self._offsets)


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)
