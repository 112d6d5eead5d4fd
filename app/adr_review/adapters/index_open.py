"""Open and refresh the ADR index of a folder; what `index`, `recall`, the eval and the Action call.

    index = open_index_for(adr_dir, store_dir, embedding, config)
    synced = ensure_synced(index, adr_dir)      # incremental: only changed ADRs are re-embedded
    result = index.search(query, exclude_paths=frozenset({proposal.path}))

Import it lazily (inside the command that needs it): it imports chromadb.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from adr_review.adapters.adr_files import load_adr_folder_cached, unchanged_adr_folder
from adr_review.adapters.chroma_store import collection_name_for
from adr_review.adapters.embeddings import canonical_name
from adr_review.adapters.index import ChromaAdrIndex
from adr_review.adapters.xl_channel import scorer_gates
from adr_review.config import RetrievalConfig
from adr_review.core.adr import Adr, AdrParseError
from adr_review.core.chunking import ChunkParams
from adr_review.core.evidence_model import DEFAULT_EVIDENCE
from adr_review.core.fusion import FusionParams
from adr_review.core.lexical import Bm25Params
from adr_review.pipeline.ports import SyncReport

Progress = Callable[[int, int], None]

DEFAULT_STORE = Path(".adr-review")

# Cosine thresholds of the OR-gate per embedding: each model has its own cosine scale. The offline
# default is measured (docs/retrieval.md); the others are conventional starting points for
# normalised sentence embeddings - calibrate with `adr-review eval retrieval` on your own ADRs.
QUALIFY_COSINE = {"offline-hash": 0.25, "default": 0.5}
QUALIFY_COSINE_OTHER = 0.5


class Synced:
    """A sync's report, the folder's ADRs and its parse errors. After a no-op sync the ADRs are read
    from the parse cache on first use: `adr-review index` never needs them."""

    def __init__(
        self,
        report: SyncReport,
        adrs: list[Adr] | Callable[[], list[Adr]],
        parse_errors: list[AdrParseError],
        cached_parse: Callable[[str, str], Adr | None] | None = None,
    ) -> None:
        self.report = report
        self.parse_errors = parse_errors
        self._adrs = adrs
        self._cached_parse = cached_parse

    def parse_of(self, rel: str, sha256: str) -> Adr | None:
        """A folder file's parse as the parse cache holds it (path relative to the folder, SHA-256
        of its bytes), after a no-op sync; None when the cache was not read or holds other bytes."""
        return self._cached_parse(rel, sha256) if self._cached_parse is not None else None

    @property
    def adrs(self) -> list[Adr]:
        if callable(self._adrs):
            self._adrs = self._adrs()
        return self._adrs


def qualify_cosine_for(embedding: str, configured: float | None) -> float:
    if configured is not None:
        return configured
    return QUALIFY_COSINE.get(embedding, QUALIFY_COSINE_OTHER)


def fusion_params(config: RetrievalConfig, embedding: str) -> FusionParams:
    gate, fill = scorer_gates(config.cross_language_scorer)
    gate = gate if config.cross_language_gate is None else config.cross_language_gate
    fill = fill if config.cross_language_fill_gate is None else config.cross_language_fill_gate
    return FusionParams(
        dense_weight=config.dense_weight,
        title_weight=config.title_weight,
        qualify_cosine=qualify_cosine_for(embedding, config.qualify_cosine),
        qualify_bm25_rel=config.qualify_bm25_rel,
        mmr_lambda=config.mmr_lambda,
        top_n=config.top_n,
        cross_language_slots=min(config.cross_language_slots, config.cross_language_rank),
        cross_language_rank=config.cross_language_rank,
        cross_language_gate=gate,
        cross_language_fill_gate=fill,
        evidence=DEFAULT_EVIDENCE,
    )


def open_index_for(
    adr_dir: Path | str,
    store_dir: Path | str | None = None,
    embedding: str | None = None,
    config: RetrievalConfig | None = None,
) -> ChromaAdrIndex:
    """The persistent index of one ADR folder (created on first use). Nothing is embedded yet."""
    cfg = config or RetrievalConfig()
    adr_path = Path(adr_dir)
    store = Path(store_dir or cfg.store_dir or DEFAULT_STORE)
    return _open(store, collection_name_for(adr_path), cfg, embedding, adr_dir=str(adr_path.resolve()))


def open_index(
    store_dir: Path | str,
    config: RetrievalConfig | None = None,
    embedding: str | None = None,
    *,
    collection: str = "adrs",
) -> ChromaAdrIndex:
    """An index in a folder of its own (one ADR folder per store, e.g. the App's per-repo cache):
    fixed collection name, so the store can move (cache restore) without a rebuild. Sync it with
    the ADRs (from disk or from GitHub) before searching. On a Chroma server (chroma_store.py), which
    holds every folder's index, the caller names the collection (the App: the index slot)."""
    return _open(Path(store_dir), collection, config or RetrievalConfig(), embedding)


def _open(
    store: Path, collection: str, cfg: RetrievalConfig, embedding: str | None, adr_dir: str = ""
) -> ChromaAdrIndex:
    name = canonical_name(embedding or cfg.embedding)
    return ChromaAdrIndex(
        store,
        collection,
        embedding=name,
        fusion=fusion_params(cfg, name),
        chunking=ChunkParams(target=cfg.chunk_target, maximum=max(cfg.chunk_max, cfg.chunk_target)),
        bm25=Bm25Params(k1=cfg.bm25_k1, b=cfg.bm25_b),
        adr_dir=adr_dir,
        multilingual=cfg.multilingual,
        cross_language_scorer=cfg.cross_language_scorer,
        dense_temperature=cfg.dense_temperature,
    )


def ensure_synced(index: ChromaAdrIndex, adr_dir: Path | str, progress: Progress | None = None) -> Synced:
    """Parse the folder and bring the index up to date; parse errors are reported, never fatal.

    Parsed ADRs are cached next to the index by content hash (and parser version), so a refresh only
    parses the files that changed; when no file changed (size and mtime) and the index holds exactly
    the folder, the parsed ADRs are not even loaded until something reads them.
    """
    cache = index.store_dir / f"parsed-{index.collection_name}.json"
    folder = unchanged_adr_folder(Path(adr_dir), cache)
    quick = index.sync_if_unchanged(folder.hashes(), lambda: folder.adrs) if folder is not None else None
    adrs: list[Adr] | Callable[[], list[Adr]]
    cached_parse = None
    if folder is not None and quick is not None:
        report, errors = quick, folder.errors
        adrs = lambda: folder.adrs  # noqa: E731 - read on first use (Synced.adrs)
        cached_parse = folder.parse_of
    else:
        # the store is opened while the files are parsed in other processes (a cold index), and
        # those processes embed and count what they parsed (index_prep.py)
        prep = index.preparation()
        adrs, errors = load_adr_folder_cached(Path(adr_dir), cache, meanwhile=index.open_store, side=prep)
        report = index.sync(adrs, progress=progress, prepared=prep)
    if errors:
        report = SyncReport(
            added=report.added,
            updated=report.updated,
            removed=report.removed,
            unchanged=report.unchanged,
            errors=tuple(f"{e.path}: {e.reason}" for e in errors) + report.errors,
            seconds=report.seconds,
            embedding=report.embedding,
            rebuilt=report.rebuilt,
        )
    return Synced(report, adrs, errors, cached_parse)
