"""BM25's statistics of an indexed folder, kept beside the index by content hash.

Tokenising every ADR was most of a recall process's time (every process rebuilt BM25 from the texts).
The term counts per ADR (adr_review.core.lexical.TermCounts) are all BM25 needs; they are stored here, one
row per content hash, so a process loads arrays and counts only the ADRs it has not seen. Document
frequencies and lengths are derived on load (LexicalIndex.from_counts).

One array file per index (array_file.py: numpy records, no pickle, mapped on read): the content
hashes, the vocabulary as one newline-joined UTF-8 blob (tokens never contain whitespace), the count
arrays, and as its configuration the key of the code that produced them (the parser, the tokeniser,
the counting): any change there invalidates it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from adr_review.adapters.array_file import read_arrays, write_arrays
from adr_review.core.adr import Adr
from adr_review.core.lexical import TermCounts

FORMAT = "adr-review-lexical/2"


@functools.cache
def counts_key() -> str:
    """Hash of every source the counts depend on: decoding (the parser's version) and tokenising."""
    from adr_review.adapters.adr_files import _parser_version
    from adr_review.core import lexical, text

    h = hashlib.sha256(f"{FORMAT}:{_parser_version()}".encode())
    for module in (lexical, text):  # the counting and the tokeniser
        h.update(Path(str(module.__file__)).read_bytes())
    return h.hexdigest()[:16]


def _read(path: Path) -> tuple[list[str], TermCounts] | None:
    got = read_arrays(path, FORMAT, counts_key())
    if got is None:
        return None
    try:
        _meta, z = got
        hashes = [h.decode("ascii") for h in z["hashes"].tolist()]
        blob = z["vocab"].tobytes().decode("utf-8")
        counts = TermCounts(
            tuple(blob.split("\n")) if blob else (),
            np.asarray(z["offsets"], dtype=np.int64),
            np.asarray(z["terms"], dtype=np.int32),
            np.asarray(z["counts"], dtype=np.int32),
        )
    except (KeyError, ValueError, AttributeError):
        return None
    rows = len(counts.terms)  # no offsets at all reads as -1 documents, before offsets[-1] is looked at
    if counts.n_docs != len(hashes) or int(counts.offsets[-1]) != rows or len(counts.counts) != rows:
        return None
    return hashes, counts


def _write(path: Path, hashes: Sequence[str], counts: TermCounts) -> None:
    write_arrays(
        path,
        {"format": FORMAT, "config": counts_key()},
        f"lexical cache {path}",
        hashes=np.array([h.encode("ascii") for h in hashes], dtype="S"),
        vocab=np.frombuffer("\n".join(counts.vocab).encode("utf-8"), dtype=np.uint8),
        offsets=counts.offsets,
        terms=counts.terms,
        counts=counts.counts,
    )


def is_current(adrs: Sequence[Adr], path: Path) -> bool:
    """True when the cache holds exactly these ADRs, in this order (reads only the hashes)."""
    return holds(path, [a.content_hash for a in adrs])


def holds(path: Path, hashes: Sequence[str]) -> bool:
    """True when the cache's rows are exactly these content hashes, in this order."""
    got = _read(path)  # a mapped file: the counts are not read until used
    return got is not None and got[0] == list(hashes)


def term_counts(
    adrs: Sequence[Adr], path: Path, counted: Sequence[tuple[Sequence[str], TermCounts]] = ()
) -> TermCounts:
    """The counts of these ADRs (rows in their order): from the cache, or from `counted` (rows already
    counted elsewhere: (their content hashes, their counts), index_prep.py), counting only the ADRs
    neither has; the cache is rewritten to exactly these ADRs when it was not already."""
    want = [a.content_hash for a in adrs]
    got = _read(path)
    if got is not None and got[0] == want:
        return got[1]
    known: dict[str, tuple[TermCounts, int]] = {}
    for hashes, source in [*counted, *([got] if got is not None else [])]:  # the cache has the last word
        known.update((h, (source, i)) for i, h in enumerate(hashes))
    missing: dict[str, Adr] = {}
    for a in adrs:
        if a.content_hash not in known:
            missing.setdefault(a.content_hash, a)
    fresh = TermCounts.of(a.text for a in missing.values())
    known.update((h, (fresh, i)) for i, h in enumerate(missing))
    picks = [known[h] for h in want]
    counts = TermCounts.gather(picks)
    _write(path, want, counts)
    return counts
