"""The guard's evidence features: what a diff says about one ADR, measured so it does not grow with
the diff's size. Pure.

The review's features (app/adr_review/core/evidence.py) score an ADR against an ADR. Against a diff,
the raw overlap grows with the number of changed lines: a 1,000-line commit that names no decision
shares more words with every ADR than a 20-line one that implements one. So each feature here is
either a z-score against the pool (what an arbitrary ADR of the folder scores on the same diff) or a
comparison between candidates:

- `added_rare_z`: the share of the ADR's rarest terms (by IDF over the folder) found in the diff's
  added lines, as a z-score over the folder's ADRs;
- `path_z`: the share of the words of the changed paths (directories, file stems) that the ADR
  names, as a z-score over the folder's ADRs;
- `deps`: 1 when the ADR names a dependency that a manifest of the diff adds or removes (a word rare
  in the folder), else 0;
- `margin`: the candidate's BM25 z-score minus the best other candidate's (positive only for the
  top one, and larger the more it stands out);
- `title_text`: the share of the PR title's words that the ADR names (its title or text): the title
  is a sentence, not a diff, so it does not grow with the change; 0 without a title. The one guard
  feature the shipped model weighs (docs/benchmarks.md, "New signals, held out");
- `body_text`: the same share for the words of the PR body (as far as the query took it); 0 without
  a body.

The first three read every ADR of the folder (`FOLDER_WIDE`); `guard_features(..., wide=False)`
leaves them out for a model that does not weigh them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from adr_review.core.adr import Adr
from adr_review.core.evidence import Background, features_of
from adr_review.core.guard import GuardQuery, words
from adr_review.core.results import Candidate

RARE_TERMS = 20  # the ADR's terms of highest IDF over the folder that `added_rare_z` looks for
DEP_DF = 0.2  # a dependency word named by more than this share of the folder's ADRs says nothing
FOLDER_WIDE = ("added_rare_z", "path_z", "deps")  # the features that read every ADR of the folder


@lru_cache(maxsize=8192)
def _terms(title: str, text: str) -> frozenset[str]:
    return frozenset(words(f"{title}\n{text}"))


def adr_terms(adr: Adr) -> frozenset[str]:
    return _terms(adr.title, adr.text)


def rare_terms(terms: frozenset[str], df: Counter[str], size: int, limit: int = RARE_TERMS) -> set[str]:
    """The `limit` terms of highest IDF (fewest ADRs of the folder name them); ties alphabetical."""
    ranked = sorted(terms, key=lambda t: (df[t], t))
    return {t for t in ranked[:limit] if df[t] < max(size, 2)}


def path_words(query: GuardQuery) -> set[str]:
    """The words of the changed files' directories and file stems."""
    out: set[str] = set()
    for f in query.files:
        stem = f.path.rsplit(".", 1)[0] if "." in f.path.rsplit("/", 1)[-1] else f.path
        out.update(words(stem.replace("/", " ").replace("_", " ").replace("-", " ")))
    return out


def _zs(values: dict[str, float]) -> dict[str, float]:
    """Each value as a z-score over all of them (0 when they are all equal)."""
    mean = sum(values.values()) / max(len(values), 1)
    std = math.sqrt(sum((v - mean) ** 2 for v in values.values()) / max(len(values), 1))
    return {k: (v - mean) / std if std > 1e-9 else 0.0 for k, v in values.items()}


def guard_features(
    candidates: Sequence[Candidate],
    background: Background,
    query: GuardQuery,
    folder: Sequence[Adr],
    *,
    wide: bool = True,
) -> list[dict[str, float]]:
    """Each candidate's features (the review's and the guard's), in the candidates' order (the rank
    feature is its place there); `wide=False`: without the `FOLDER_WIDE` ones."""
    base = [features_of(c, i, background) for i, c in enumerate(candidates)]
    title = set(words(query.title))
    body = set(words(query.body))
    bm25 = [f["bm25_z"] for f in base]
    out = []
    for i, (c, f) in enumerate(zip(candidates, base, strict=True)):
        others = bm25[:i] + bm25[i + 1 :]
        out.append(
            f
            | {
                "margin": f["bm25_z"] - max(others) if others else 0.0,
                "title_text": len(title & adr_terms(c.adr)) / len(title) if title else 0.0,
                "body_text": len(body & adr_terms(c.adr)) / len(body) if body else 0.0,
            }
        )
    if wide:
        for f, extra in zip(out, _folder_wide(candidates, query, folder), strict=True):
            f |= extra
    return out


def _folder_wide(
    candidates: Sequence[Candidate], query: GuardQuery, folder: Sequence[Adr]
) -> list[dict[str, float]]:
    adrs = list({a.path: a for a in [*folder, *(c.adr for c in candidates)]}.values())
    terms = {a.path: adr_terms(a) for a in adrs}
    df: Counter[str] = Counter(t for ts in terms.values() for t in ts)
    size = len(adrs)
    added = {w for q in query.lines if q.change == "added" for w in words(q.line.text)}
    paths = path_words(query)
    dep_words = {ws[-1] for d in query.dependencies if (ws := words(d.name))}

    def added_share(path: str) -> float:
        rare = rare_terms(terms[path], df, size)
        return len(rare & added) / len(rare) if rare else 0.0

    def path_share(path: str) -> float:
        return len(paths & terms[path]) / len(paths) if paths else 0.0

    added_z = _zs({a.path: added_share(a.path) for a in adrs})
    path_z = _zs({a.path: path_share(a.path) for a in adrs})
    out = []
    for c in candidates:
        named = {w for w in dep_words & terms[c.adr.path] if df[w] <= max(1, DEP_DF * size)}
        out.append(
            {
                "added_rare_z": added_z[c.adr.path],
                "path_z": path_z[c.adr.path],
                "deps": 1.0 if named else 0.0,
            }
        )
    return out
