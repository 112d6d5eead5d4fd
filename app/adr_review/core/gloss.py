"""Dictionary cross-language matching: an English view of Japanese text, and passage scores in it.

The cross-language channel's default scorer (app/adr_review/adapters/xl_dictionary.py, issue 18). Classic CLIR
by dictionary translation: a Japanese
text is cut into dictionary words by greedy longest match over its CJK runs, and each word is
replaced by the first gloss(es) of its first sense (a JA->EN lexicon, e.g. JMdict's); hiragana-only
words (particles, endings) are dropped. English text is used as it is. Both sides are then compared
in that English view, passage against passage (a proposal's one paragraph about delivery addresses
in events against an ADR's one rule), by TF-IDF cosine over character 4-grams of the words (so
"phone" meets the gloss "telephone", and plurals their singulars), hashed into a fixed number of
dimensions so scoring is one matrix product. Pure: the lexicon is given.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Lexicon = Mapping[str, Sequence[str]]  # surface form -> glosses of its first sense, best first

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff66-\uff9f々〆ヵヶー]+")
_HIRAGANA = re.compile(r"^[\u3040-\u309f]+$")
_PAREN = re.compile(r"\([^)]*\)")
_WORD = re.compile(r"[a-z][a-z0-9]+")
_STOP_WORDS = (
    "the a an of to in on and or for is are be by with as at it this that from not no all"
    " any its into can will must each per was were has have had been we our us they their them which who what when"
    " where how than then there these those such also only but if so do does eg etc one some more most other"
)
_STOP = frozenset(_STOP_WORDS.split())
MAX_WORD = 8  # the longest dictionary form tried at a position


@dataclass(frozen=True)
class GlossParams:
    glosses: int = 2  # glosses kept of a word's first sense
    min_terms: int = 5  # a passage with fewer distinct words in the English view is not compared
    ngram: int = 4  # character n-grams of the view's words (0: whole words)
    dims: int = 4096  # hashed feature space
    top_k: int = 3  # a document's score: the mean of its best k passage-pair cosines

    def __post_init__(self) -> None:
        if not 1 <= self.dims <= 32768:  # feature ids are stored as int16
            raise ValueError("dims must be within [1, 32768]")


def english_words(text: str) -> list[str]:
    """Lower-cased words without stop words."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def segment(run: str, lexicon: Lexicon) -> list[str]:
    """Greedy longest match of dictionary forms over one CJK run; unknown characters are skipped."""
    out: list[str] = []
    i = 0
    while i < len(run):
        for n in range(min(MAX_WORD, len(run) - i), 0, -1):
            word = run[i : i + n]
            if word in lexicon and (n > 1 or not _HIRAGANA.match(word)):
                out.append(word)
                i += n
                break
        else:
            i += 1
    return out


def gloss_words(text: str, lexicon: Lexicon, glosses: int = 1) -> list[str]:
    """The English view of a (Japanese) text: its Latin words, then the glosses of its CJK words."""
    out = english_words(_CJK.sub(" ", text))
    for match in _CJK.finditer(text):
        for word in segment(match.group(0), lexicon):
            if _HIRAGANA.match(word):
                continue
            for g in list(lexicon[word])[:glosses]:
                out.extend(english_words(_PAREN.sub(" ", g)))
    return out


def view(text: str, japanese: bool, lexicon: Lexicon, params: GlossParams) -> list[str]:
    return gloss_words(text, lexicon, params.glosses) if japanese else english_words(text)


def features(words: Sequence[str], params: GlossParams) -> list[str]:
    if not params.ngram:
        return list(words)
    n = params.ngram
    out: list[str] = []
    for w in words:
        w = f"_{w}_"
        out.extend(w[i : i + n] for i in range(max(1, len(w) - n + 1)))
    return out


def views(
    passages: Sequence[str], japanese: bool, lexicon: Lexicon, params: GlossParams
) -> list[tuple[str, list[str]]]:
    """(passage, its English view) for the passages worth comparing: >= min_terms distinct words."""
    out = [(p, view(p, japanese, lexicon, params)) for p in passages]
    return [(p, w) for p, w in out if len(set(w)) >= params.min_terms]


Sparse = tuple[np.ndarray, np.ndarray]  # a passage's hashed feature ids (sorted, unique) and counts


def sparse(words: Sequence[str], params: GlossParams) -> Sparse:
    """A passage's view as hashed feature counts: computed once per ADR content (the costly part)."""
    ids = np.fromiter((_hash(f) % params.dims for f in features(words, params)), dtype=np.int64)
    got, counts = np.unique(ids, return_counts=True)
    return got.astype(np.int32), counts.astype(np.float32)


def _hash(feature: str) -> int:
    return zlib.crc32(feature.encode())  # stable across processes, unlike hash()


@dataclass(frozen=True)
class PassageMatrix:
    """Every passage of a set of documents as a sparse TF-IDF row (CSR: ids, values, row starts),
    which document each belongs to, and the IDF over them. Sparse: a folder of 644 ADRs has about
    17,000 passages, 280 MB as dense rows."""

    ids: np.ndarray  # (nnz,) feature ids
    values: np.ndarray  # (nnz,) sublinear TF x IDF, each row of unit length
    starts: np.ndarray  # (passages + 1,) where each row begins in ids / values
    owner: np.ndarray  # (passages,) document index
    weights: np.ndarray  # (dims,) IDF
    n_docs: int


def passage_matrix(doc_passages: Sequence[Sequence[Sparse]], params: GlossParams) -> PassageMatrix:
    """doc_passages: per document its passages as `sparse` counts; IDF over all of them."""
    rows = [r for rs in doc_passages for r in rs]
    sizes = np.asarray([len(r[0]) for r in rows], dtype=np.int64)
    ids = np.concatenate([r[0] for r in rows]) if rows else np.zeros(0, np.int64)
    counts = np.concatenate([r[1] for r in rows]) if rows else np.zeros(0, np.float32)
    per_doc = np.asarray([len(rs) for rs in doc_passages], dtype=np.int64)
    return flat_passage_matrix(ids, counts, sizes, per_doc, params)


def flat_passage_matrix(
    ids: np.ndarray, counts: np.ndarray, sizes: np.ndarray, per_doc: np.ndarray, params: GlossParams
) -> PassageMatrix:
    """`passage_matrix` of passages already laid end to end (as the views' file keeps them): every
    passage's feature ids and counts concatenated, each passage's size, each document's passage count."""
    ids = ids.astype(np.int64)
    sizes = sizes.astype(np.int64)
    starts, owner = _layout(sizes, per_doc)
    n_rows = len(sizes)
    df = np.bincount(ids, minlength=params.dims)  # ids are unique within a row
    weights = np.log((n_rows + 1) / (df + 0.5)).astype(np.float32)
    values = ((1.0 + np.log(np.maximum(counts, 1.0))) * weights[ids]).astype(np.float32)
    norms = np.sqrt(_row_sums(values**2, starts))
    values = values / np.repeat(np.where(norms > 0, norms, 1.0), sizes).astype(np.float32)
    return PassageMatrix(ids, values, starts, owner, weights, len(per_doc))


def stored_passage_matrix(
    ids: np.ndarray, values: np.ndarray, sizes: np.ndarray, per_doc: np.ndarray, weights: np.ndarray
) -> PassageMatrix:
    """A matrix `flat_passage_matrix` made and its values and weights kept (the views' file keeps
    them): only the layout is computed again, so a recall reads the matrix instead of building it."""
    starts, owner = _layout(sizes.astype(np.int64), per_doc)
    return PassageMatrix(ids.astype(np.int64), values, starts, owner, weights, len(per_doc))


def _layout(sizes: np.ndarray, per_doc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each passage's first entry (and the end of the last), and each passage's document."""
    owner = np.repeat(np.arange(len(per_doc), dtype=np.int64), per_doc)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), owner


def _row_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    cums = np.concatenate([[0.0], np.cumsum(values, dtype=np.float64)])
    return cums[starts[1:]] - cums[starts[:-1]]


def _row_sums_at(values: np.ndarray, at: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """`_row_sums` of a vector that is `values` at the sorted entries `at` and 0 everywhere else.
    Adding 0.0 leaves a running sum as it was, so every prefix sum over the nonzero entries alone,
    and so every row sum, is bit-identical to `_row_sums` over the whole vector; the cumulative sum
    runs over the few entries a query's features touch instead of the whole matrix."""
    keep = values != 0
    cums = np.concatenate([[0.0], np.cumsum(values[keep], dtype=np.float64)])
    bounds = np.searchsorted(at[keep], starts)  # nonzero entries before each row start
    return cums[bounds[1:]] - cums[bounds[:-1]]


def _query_row(row: Sparse, weights: np.ndarray, dims: int) -> np.ndarray:
    q = np.zeros(dims, dtype=np.float32)
    q[row[0]] = (1.0 + np.log(np.maximum(row[1], 1.0))) * weights[row[0]]
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 0 else q


def passage_scores(
    query_passages: Sequence[Sparse], matrix: PassageMatrix, params: GlossParams
) -> np.ndarray:
    """Per passage of the matrix its best cosine with any of the query's passages."""
    best = np.zeros(len(matrix.owner), dtype=np.float64)
    if not query_passages:
        return best
    # the entries holding any of the query's features: every other product is 0 for every passage
    touched = np.zeros(params.dims, dtype=bool)
    for row in query_passages:
        touched[row[0]] = True
    at = np.flatnonzero(touched[matrix.ids])
    ids, values = matrix.ids[at], matrix.values[at]
    for row in query_passages:
        q = _query_row(row, matrix.weights, params.dims)
        np.maximum(best, _row_sums_at(q[ids] * values, at, matrix.starts), out=best)
    return best


def document_scores(
    query_passages: Sequence[Sparse],
    matrix: PassageMatrix,
    params: GlossParams,
    best: np.ndarray | None = None,
) -> np.ndarray:
    """Per document the mean of its top_k passage-pair cosines with the query (0 without passages);
    `best`: passage_scores, when the caller has them already."""
    out = np.zeros(matrix.n_docs, dtype=np.float32)
    if not query_passages or not len(matrix.owner):
        return out
    best = passage_scores(query_passages, matrix, params) if best is None else best
    order = np.lexsort((-best, matrix.owner))  # by document, best first within it
    owner, best = matrix.owner[order], best[order]
    start = np.searchsorted(owner, owner, side="left")
    keep = np.arange(len(owner)) - start < params.top_k  # each document's first top_k
    sums = np.bincount(owner[keep], weights=best[keep], minlength=matrix.n_docs)
    counts = np.bincount(owner[keep], minlength=matrix.n_docs)
    np.divide(sums, np.maximum(counts, 1), out=out, casting="unsafe")
    return out


def best_passage(best: np.ndarray, matrix: PassageMatrix) -> np.ndarray:
    """Per document the index of its best-matching passage in the matrix (-1: none, or none matched):
    what a reader is shown as the reason a cross-language candidate is there."""
    out = np.full(matrix.n_docs, -1, dtype=np.int64)
    order = np.lexsort((-best, matrix.owner))
    first = np.ones(len(order), dtype=bool)
    first[1:] = matrix.owner[order][1:] != matrix.owner[order][:-1]
    top = order[first]
    matched = best[top] > 0
    out[matrix.owner[top][matched]] = top[matched]
    return out


def relative(scores: Sequence[float], same_language: Sequence[bool]) -> list[float]:
    """Each score over the best same-language document's: in the English view a native query's answers
    match word for word, so the other language trails far behind; a translated one's do not. With no
    same-language document in scope (a folder all in the other language) there is nothing to trail:
    over the best document's. 0 when nothing scored."""
    same = [float(s) for s, x in zip(scores, same_language, strict=True) if x]
    top = max(same) if same else max((float(s) for s in scores), default=0.0)
    return [float(s) / top if top > 0 else 0.0 for s in scores]


_FIELD = re.compile(r"^[^\s:：][^:：]{0,24}[:：]")  # "Status: accepted", "日付: 2024-09-02"


def passages(blocks: Sequence[tuple[str, str]], title: str | None = None) -> list[str]:
    """The title and the paragraphs (kind, text) a reader sees, without metadata fields or repeats:
    every one (glossing is cheap, unlike the encoder's passages)."""
    out: dict[str, None] = {title.strip(): None} if title and title.strip() else {}
    for kind, text in blocks:
        text = text.strip()
        if kind in ("paragraph", "plain") and text and not (len(text) < 100 and _FIELD.match(text)):
            out[text] = None
    return list(out)
