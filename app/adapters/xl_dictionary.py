"""The cross-language channel's dictionary scorer: English views of every ADR's passages, by hash.

Beside the index, like xl_vectors.py (the encoder scorers), it scores the ADRs in another language
than the query for the fusion's cross-language slots only (app/core/fusion.py). Every ADR's
passages (the title and each paragraph and item a reader sees, app/core/gloss.py) are put into an
English view once per content hash: Japanese words by JMdict's glosses (gloss_lexicon.py), English
as it is. The views are kept in `xl-dict-<collection>.json.gz`, so a sync glosses only new or changed
ADRs and an English query needs no dictionary at all (a Japanese one loads it, about a second, once
per process). A document's score is the mean of its 3 best passage-pair TF-IDF cosines over
character 4-grams in that view, divided by the best same-language document's score in scope
(`gloss.relative`): for a native query its own language's answers match word for word, so the other
language trails far behind; for a proposal that cites across languages it does not.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from app.adapters.embeddings import EmbeddingError
from app.adapters.gloss_lexicon import lexicon_version, load_lexicon
from app.core import gloss
from app.core.adr import Adr
from app.core.adr.reader import reader_blocks, text_reader_blocks

log = logging.getLogger("adr_review.index")

NAME = "dictionary"
FORMAT = "adr-review-xl-dict/1"
MISSING = "the JMdict dictionary (jamdict-data) is not installed: pip install 'adr-review[multilingual]'"

Row = tuple[str, str, list[list[str]]]  # content hash, language, the views of its passages


def adr_views(adr: Adr, lexicon: gloss.Lexicon, params: gloss.GlossParams) -> list[list[str]]:
    blocks = [(b.kind, b.text) for b in reader_blocks(adr)]
    return gloss.views(gloss.passages(blocks, adr.title), adr.language == "ja", lexicon, params)


def query_views(
    text: str, japanese: bool, lexicon: gloss.Lexicon, params: gloss.GlossParams
) -> list[list[str]]:
    blocks = list(text_reader_blocks(text))
    title = next((b.text for b in blocks if b.kind == "heading"), None)
    return gloss.views(gloss.passages([(b.kind, b.text) for b in blocks], title), japanese, lexicon, params)


class DictionaryViews:
    """The English views per ADR by content hash, and the relative score of a query against them."""

    model = NAME

    def __init__(self, store_dir: Path, collection: str, params: gloss.GlossParams | None = None) -> None:
        self.path = Path(store_dir) / f"xl-dict-{collection}.json.gz"
        self.params = params or gloss.GlossParams()
        self.config = json.dumps({"jmdict": lexicon_version(), **asdict(self.params)}, sort_keys=True)
        self._rows: dict[str, Row] = {}
        self._matrix: tuple[list[str], gloss.PassageMatrix] | None = None
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
        if any(a.language == "ja" for a in todo):
            got = load_lexicon()
            if got is None:
                raise EmbeddingError(MISSING)
            lexicon = got
        elif lexicon_version() is None:
            raise EmbeddingError(MISSING)  # a later Japanese query would need it
        fresh = {a.path: (a.content_hash, a.language, adr_views(a, lexicon, self.params)) for a in todo}
        self._rows = {a.path: fresh.get(a.path) or self._rows[a.path] for a in adrs}
        self._matrix = None
        self._save()
        return len(todo)

    def scores(
        self, query: str, language: str, paths: Sequence[str], same_paths: Sequence[str] = ()
    ) -> dict[str, float]:
        """The relative score of every given (other-language) ADR the file holds; `same_paths`: the
        same-language ADRs in scope, whose best score is the measure. EmbeddingError when a Japanese
        query needs the dictionary and it is not installed."""
        self._load()
        wanted = [p for p in paths if p in self._rows]
        if not wanted:
            return {}
        lexicon: gloss.Lexicon = {}
        if language == "ja":
            got = load_lexicon()
            if got is None:
                raise EmbeddingError(MISSING)
            lexicon = got
        order, matrix = self._passage_matrix()
        at = {p: i for i, p in enumerate(order)}
        raw = gloss.document_scores(
            query_views(query, language == "ja", lexicon, self.params), matrix, self.params
        )
        same = [p for p in same_paths if p in at]
        scored = [float(raw[at[p]]) for p in same + wanted]
        rel = gloss.relative(scored, [True] * len(same) + [False] * len(wanted))
        return dict(zip(wanted, rel[len(same) :], strict=True))

    def _passage_matrix(self) -> tuple[list[str], gloss.PassageMatrix]:
        """Every stored ADR's passages (the IDF is the folder's), built once per process and content."""
        if self._matrix is None:
            order = sorted(self._rows)
            self._matrix = (order, gloss.passage_matrix([self._rows[p][2] for p in order], self.params))
        return self._matrix

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            with gzip.open(self.path, "rt", encoding="utf-8") as f:
                raw = json.load(f)
            if raw.get("format") != FORMAT or raw.get("config") != self.config:
                return
            self._rows = {
                str(p): (str(h), str(lang), [[str(w) for w in v] for v in views])
                for p, (h, lang, views) in raw["rows"].items()
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self._rows = {}  # missing or unreadable: the next sync glosses everything again

    def _save(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(tmp, "wt", encoding="utf-8") as f:
                json.dump(
                    {"format": FORMAT, "config": self.config, "rows": self._rows}, f, ensure_ascii=False
                )
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("cross-language views not written (%s): the next sync glosses them again", exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
