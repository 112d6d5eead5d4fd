"""A document's dense score from its chunks' cosines: best chunk, or a soft maximum over them.

The best chunk's cosine (the maximum) favours long documents: the maximum of many noisy cosines is
higher than that of a few, whatever the topic. The soft maximum

    score = m + t * log(mean(exp((c - m) / t)))      (m: the best cosine, t: the temperature)

is the best cosine less a penalty for the chunks that do not match: one chunk gives exactly its
cosine, n chunks of which one matches give about m - t * log(n), n equally matching chunks give m.
t -> 0 is the maximum again (t = 0 is exactly it), a large t tends to the mean. Measured on the
shared corpora (docs/retrieval.md): no gain that survives a change of the fusion weights, so the
default is 0 (the best chunk); the knob is `retrieval.dense_temperature`.
"""

from __future__ import annotations

import numpy as np


def chunk_scores(cosines: np.ndarray, offsets: np.ndarray, temperature: float = 0.0) -> np.ndarray:
    """Per document, from the cosines of every chunk (document d's are `cosines[offsets[d]:offsets[d+1]]`,
    every document with at least one chunk): the maximum when `temperature` is 0, else the soft one."""
    if temperature < 0:
        raise ValueError("temperature must be >= 0")
    starts = np.asarray(offsets[:-1], dtype=np.int64)
    c = np.asarray(cosines, dtype=np.float64)
    best = np.maximum.reduceat(c, starts)
    if temperature == 0 or len(c) == 0:
        return best
    lengths: np.ndarray = np.diff(np.asarray(offsets, dtype=np.int64)).astype(np.int64)
    shifted = np.exp((c - np.repeat(best, lengths)) / temperature)  # in (0, 1]: no overflow
    mean = np.add.reduceat(shifted, starts) / lengths
    return best + temperature * np.log(mean)
