"""The cross-language channel's dictionary scorer: English views of every ADR's passages, by hash.

Beside the index, like xl_vectors.py (the encoder scorers), it scores the ADRs in another language
than the query for the fusion's cross-language slots only (app/adr_review/core/fusion.py). Every ADR's
passages (the title and each paragraph and item a reader sees, app/adr_review/core/gloss.py) are put into an
English view once per content hash: Japanese words by JMdict's glosses (gloss_lexicon.py), English
as it is. The views, as hashed feature counts, are kept in `xl-dict-<collection>.arrays`, so a sync
glosses only new or changed ADRs and an English query needs no dictionary at all (a Japanese one
loads it, about a second, once per process). A document's score is the mean of its 3 best passage-pair TF-IDF cosines over
character 4-grams in that view, divided by the best same-language document's score in scope
(`gloss.relative`): for a native query its own language's answers match word for word, so the other
language trails far behind; for a proposal that cites across languages it does not.
"""

from __future__ import annotations

import json
import logging
import operator
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import SupportsIndex, TypeVar, overload

import numpy as np

from adr_review.adapters.array_file import SUFFIX, read_arrays, write_arrays
from adr_review.adapters.embeddings import EmbeddingError
from adr_review.adapters.gloss_lexicon import lexicon_problem, lexicon_version, load_lexicon
from adr_review.core import gloss
from adr_review.core.adr import Adr
from adr_review.core.adr.reader import reader_blocks, text_reader_blocks
from adr_review.core.fusion import CrossLanguageMatch

log = logging.getLogger("adr_review.index")
T = TypeVar("T")

NAME = "dictionary"
FORMAT = "adr-review-xl-dict/3"
PRELOAD_AFTER = 60  # Japanese ADRs to gloss in one sync before the whole lexicon is read at once
MISSING = "the JMdict dictionary (jamdict-data) is not installed: pip install 'adr-review[multilingual]'"


def _missing() -> str:
    """Why there is no lexicon: the package is missing, and what is wrong with a prebuilt file named."""
    problem = lexicon_problem()
    return f"{MISSING} ({problem})" if problem else MISSING


# content hash, language, its compared passages' feature counts, and their text (the evidence shown)
Row = tuple[str, str, Sequence[gloss.Sparse], Sequence[str]]


class _Slices(Sequence[T]):
    """Items `lo`..`hi` of arrays the file lays end to end (`ends`: where each item ends), each cut
    only when asked for: a recall reads the whole matrix at once and shows a handful of texts, never
    the 17,000 slices of a 644-ADR folder (cutting them all cost more than its search)."""

    def __init__(self, ends: np.ndarray, lo: int, hi: int) -> None:
        self._ends, self._lo, self._hi = ends, lo, hi

    def _cut(self, start: int, end: int) -> T:
        raise NotImplementedError

    def __len__(self) -> int:
        return self._hi - self._lo

    @overload
    def __getitem__(self, i: SupportsIndex) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[T]: ...

    def __getitem__(self, i: SupportsIndex | slice) -> T | Sequence[T]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        j = operator.index(i)
        if not -len(self) <= j < len(self):
            raise IndexError(j)
        k = self._lo + (j % len(self))
        return self._cut(int(self._ends[k - 1]) if k else 0, int(self._ends[k]))


class _Passages(_Slices[gloss.Sparse]):
    """One ADR's passages: feature ids and counts."""

    def __init__(self, ids: np.ndarray, counts: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> None:
        super().__init__(ends, lo, hi)
        self._ids, self._counts = ids, counts

    def _cut(self, start: int, end: int) -> gloss.Sparse:
        # the file keeps them in 16 bits: a Sparse's own types (what `gloss.sparse` makes)
        return self._ids[start:end].astype(np.int32), self._counts[start:end].astype(np.float32)


class _Texts(_Slices[str]):
    """Passage texts: slices of the file's UTF-8 text, decoded when one is shown."""

    def __init__(self, text: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> None:
        super().__init__(ends, lo, hi)
        self._text = text

    def _cut(self, start: int, end: int) -> str:
        return self._text[start:end].tobytes().decode("utf-8")


def adr_rows(
    adr: Adr, lexicon: gloss.Lexicon, params: gloss.GlossParams
) -> tuple[list[gloss.Sparse], list[str]]:
    blocks = [(b.kind, b.text) for b in reader_blocks(adr)]
    kept = gloss.views(gloss.passages(blocks, adr.title), adr.language == "ja", lexicon, params)
    return [gloss.sparse(v, params) for _t, v in kept], [t for t, _v in kept]


def query_rows(
    text: str, japanese: bool, lexicon: gloss.Lexicon, params: gloss.GlossParams
) -> list[gloss.Sparse]:
    blocks = list(text_reader_blocks(text))
    title = next((b.text for b in blocks if b.kind == "heading"), None)
    views = gloss.views(gloss.passages([(b.kind, b.text) for b in blocks], title), japanese, lexicon, params)
    return [gloss.sparse(v, params) for _t, v in views]


class DictionaryViews:
    """The English views per ADR by content hash, and the relative score of a query against them."""

    model = NAME

    def __init__(self, store_dir: Path, collection: str, params: gloss.GlossParams | None = None) -> None:
        self.path = Path(store_dir) / f"xl-dict-{collection}{SUFFIX}"
        self.params = params or gloss.GlossParams()
        self.config = json.dumps({"jmdict": lexicon_version(), **asdict(self.params)}, sort_keys=True)
        self._rows: dict[str, Row] = {}
        self._matrix: tuple[list[str], gloss.PassageMatrix, Sequence[str]] | None = None
        # the matrix as the file keeps it, while the rows are the ones read: a recall reads it as it is
        self._flat: tuple[list[str], gloss.PassageMatrix, Sequence[str]] | None = None
        self._loaded = False

    def holds(self, hashes: Mapping[str, str]) -> bool:
        """Whether the file holds exactly these ADRs (path -> content hash), with this configuration."""
        self._load()
        return {p: r[0] for p, r in self._rows.items()} == dict(hashes)

    def sync(self, adrs: Sequence[Adr]) -> int:
        """Gloss the ADRs that are new or changed, drop the removed ones; returns how many were glossed.
        EmbeddingError when the dictionary is not installed (the file is left as it was)."""
        self._load()
        todo = [a for a in adrs if self._rows.get(a.path, ("",))[0] != a.content_hash]
        if not todo and len(self._rows) == len(adrs):
            return 0
        lexicon: gloss.Lexicon = {}
        japanese = sum(1 for a in todo if a.language == "ja")
        if japanese:
            got = load_lexicon()
            if got is None:
                raise EmbeddingError(_missing())
            if japanese > PRELOAD_AFTER:
                got.preload()  # ~0.7 s once, against ~11 ms of lookups per ADR
            lexicon = got
        elif lexicon_version() is None:
            raise EmbeddingError(_missing())  # a later Japanese query would need it
        fresh = {a.path: (a.content_hash, a.language, *adr_rows(a, lexicon, self.params)) for a in todo}
        self._rows = {a.path: fresh.get(a.path) or self._rows[a.path] for a in adrs}
        self._matrix = self._flat = None
        self._save()
        return len(todo)

    def score(
        self, query: str, language: str, paths: Sequence[str], same_paths: Sequence[str] = ()
    ) -> CrossLanguageMatch:
        """The relative score of every given (other-language) ADR the file holds, with its passage
        that matched best; `same_paths`: the same-language ADRs in scope, whose best score is the
        measure. EmbeddingError when a Japanese query needs the dictionary and it is not installed."""
        self._load()
        wanted = [p for p in paths if p in self._rows]
        if not wanted:
            return CrossLanguageMatch()
        lexicon: gloss.Lexicon = {}
        if language == "ja":
            got = load_lexicon()
            if got is None:
                raise EmbeddingError(_missing())
            lexicon = got
        order, matrix, texts = self._passage_matrix()
        at = {p: i for i, p in enumerate(order)}
        rows = query_rows(query, language == "ja", lexicon, self.params)
        best = gloss.passage_scores(rows, matrix, self.params)
        raw = gloss.document_scores(rows, matrix, self.params, best)
        top = gloss.best_passage(best, matrix)
        same = [p for p in same_paths if p in at]
        scored = [float(raw[at[p]]) for p in same + wanted]
        rel = gloss.relative(scored, [True] * len(same) + [False] * len(wanted))
        return CrossLanguageMatch(
            dict(zip(wanted, rel[len(same) :], strict=True)),
            {p: texts[top[at[p]]] for p in wanted if top[at[p]] >= 0},
        )

    def _passage_matrix(self) -> tuple[list[str], gloss.PassageMatrix, Sequence[str]]:
        """Every stored ADR's passages (the IDF is the folder's): as the file keeps them, else built
        once per process and content."""
        if self._matrix is None:
            order = sorted(self._rows)
            if self._flat is not None and self._flat[0] == order:
                self._matrix = self._flat
            else:
                matrix = gloss.passage_matrix([self._rows[p][2] for p in order], self.params)
                self._matrix = (order, matrix, [t for p in order for t in self._rows[p][3]])
        return self._matrix

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        got = read_arrays(self.path, FORMAT, self.config)
        if got is None:
            return  # missing or unreadable: the next sync glosses everything again
        meta, z = got
        try:
            # views of the mapped file: a recall reads the matrix, a sync the counts, a comment a text
            ids, counts, sizes, values, weights = z["ids"], z["counts"], z["sizes"], z["values"], z["weights"]
            text, text_ends = z["text"], z["text_ends"]
            ends = np.cumsum(sizes)
            rows: dict[str, Row] = {}
            at = 0
            for path, digest, language, n in zip(
                meta["paths"], meta["hashes"], meta["languages"], meta["passages"], strict=True
            ):
                rows[str(path)] = (
                    str(digest),
                    str(language),
                    _Passages(ids, counts, ends, at, at + int(n)),
                    _Texts(text, text_ends, at, at + int(n)),
                )
                at += int(n)
            per_doc = np.asarray(meta["passages"], dtype=np.int64)
            matrix = gloss.stored_passage_matrix(ids, values, sizes, per_doc, weights)
        except (ValueError, KeyError, TypeError):
            return
        entries = int(ends[-1]) if len(ends) else 0
        texts_end = int(text_ends[-1]) if len(text_ends) else 0
        if (
            at == len(sizes) == len(text_ends)
            and entries == len(ids) == len(counts) == len(values)
            and texts_end == len(text)
            and len(weights) == self.params.dims
        ):
            order = [str(p) for p in meta["paths"]]
            self._rows, self._flat = rows, (order, matrix, _Texts(text, text_ends, 0, at))

    def _save(self) -> None:
        """The rows and the matrix they make, uncompressed: a recall reads the matrix (values and
        IDF) and the texts it shows as they lie, and the counts only a later sync needs."""
        order, matrix, texts = self._passage_matrix()
        passages = [r for p in order for r in self._rows[p][2]]
        meta = {
            "format": FORMAT,
            "config": self.config,
            "paths": order,
            "hashes": [self._rows[p][0] for p in order],
            "languages": [self._rows[p][1] for p in order],
            "passages": [len(self._rows[p][2]) for p in order],
        }
        encoded = [t.encode("utf-8") for t in texts]
        counts = np.concatenate([r[1] for r in passages]) if passages else np.zeros(0, np.float32)
        write_arrays(
            self.path,
            meta,
            "cross-language views",
            ids=matrix.ids.astype(np.int16),
            counts=counts.astype(np.uint16 if _small_whole(counts) else np.float32),
            sizes=np.diff(matrix.starts),
            values=matrix.values,
            weights=matrix.weights,
            text=np.frombuffer(b"".join(encoded), dtype=np.uint8),
            text_ends=np.cumsum([len(t) for t in encoded], dtype=np.int64),
        )


def _small_whole(counts: np.ndarray) -> bool:
    """Whether the counts are whole numbers below 2**16 (as `gloss.sparse` makes them): kept in
    half the bytes and read back exactly."""
    return bool(counts.max(initial=0) < 2**16 and np.array_equal(counts, np.floor(counts)))
