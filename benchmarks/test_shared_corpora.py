"""Checks that need the whole development data set (`shared/`, beside the checkout; not in the repository).

    .venv/bin/python -m pytest benchmarks/test_shared_corpora.py      # ADR_REVIEW_SHARED=<dir> to move it

The test suite (`tests/`) runs on slices copied into `tests/fixtures/` and never reads shared/. This
module keeps what only the whole set can check: every one of the 644 real ADRs parses (and loads as a
folder), and every file copied into the repository (tests/fixtures/*/SHA256SUMS, and
tests/fixtures/golden-library.sha256 for prompts/_golden/adrs/) still has the hash of its source.

Getting the corpora without shared/: each folder of shared/corpora is the numbered ADR files of one public
repository at one commit, copied unmodified; tests/fixtures/corpora/<corpus>/README.md names the
repository, commit and folder (clone it, check out the commit, copy that folder's numbered ADRs). The
qrels and the seeds exist only in shared/.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from adr_review.adapters.adr_files import load_adr_folder
from adr_review.core.adr import SECTIONS, Adr, canonical_id_key, parse_adr

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ADR_REVIEW_SHARED", REPO / ".." / "shared"))
CORPORA = SHARED / "corpora"
SEEDS = SHARED / "seeds"
FIXTURES = REPO / "tests" / "fixtures"
CORPUS_NAMES = (
    "cardano-scaling__hydra",
    "cometbft__cometbft",
    "cosmos__cosmos-sdk",
    "kompiro__karasu",
    "kumahq__kuma",
    "ministryofjustice__cloud-platform",
    "nats-io__nats-architecture-and-design",
)
SEED_ADRS = ("002_da59eb14823afb63.txt", "004_b1831af41ea4531a.txt")


@pytest.fixture(autouse=True)
def _shared_present() -> None:
    """Fail, not skip: running this module without the data it checks is a mistake to report."""
    if not (CORPORA.is_dir() and SEEDS.is_dir()):
        pytest.fail(f"shared data set missing at {SHARED.resolve()} (see this module's docstring)")


@functools.cache
def _all_corpus_adrs() -> tuple[tuple[str, Adr], ...]:
    """Every corpus file parsed once per session."""
    out = []
    for name in CORPUS_NAMES:
        root = CORPORA / name
        assert root.is_dir(), f"corpus {name} missing"
        for path in sorted(root.rglob("*.md")):
            if path.name != "README.md":
                out.append((name, parse_adr(path.relative_to(root).as_posix(), path.read_bytes())))
    return tuple(out)


def test_every_corpus_file_and_seed_parses_with_title_and_summary() -> None:
    parsed: list[Adr] = []
    per_corpus: Counter[str] = Counter()
    for corpus, adr in _all_corpus_adrs():
        where = f"{corpus}/{adr.path}"
        assert adr.title.strip(), f"{where}: empty title"
        assert adr.summary.strip(), f"{where}: empty summary"
        assert len(adr.summary) <= 601, f"{where}: summary not capped"
        assert set(adr.sections) <= set(SECTIONS)
        parsed.append(adr)
        per_corpus[corpus] += 1
    for seed in SEED_ADRS:
        adr = parse_adr(seed, (SEEDS / seed).read_bytes())
        assert adr.title.strip() and adr.summary.strip()
        parsed.append(adr)
    # The corpora README's counts: 400 English ADRs + 244 Japanese ones.
    assert per_corpus == {
        "cardano-scaling__hydra": 34,
        "cometbft__cometbft": 93,
        "cosmos__cosmos-sdk": 63,
        "kompiro__karasu": 244,
        "kumahq__kuma": 109,
        "ministryofjustice__cloud-platform": 49,
        "nats-io__nats-architecture-and-design": 52,
    }
    assert len(parsed) == 644 + 2
    # Nearly every ADR has a context or a decision section (a handful of Kuma stubs link out to a doc).
    without = [a.path for a in parsed if not ({"context", "decision"} & set(a.sections))]
    assert len(without) <= 10, without


def test_statuses_are_mostly_known() -> None:
    counts = Counter(adr.status for _corpus, adr in _all_corpus_adrs())
    # Only ADRs that state no status at all (4 MoJ security stubs, 5 Tendermint ADRs) and the Tendermint
    # template placeholder "{Deprecated|Proposed|Accepted}" (3) stay unknown.
    assert counts["unknown"] <= 12, counts
    assert counts["accepted"] > 400


def test_karasu_is_japanese_and_english_corpora_are_english() -> None:
    ja = Counter(adr.language for c, adr in _all_corpus_adrs() if c == "kompiro__karasu")
    en = Counter(adr.language for c, adr in _all_corpus_adrs() if c != "kompiro__karasu")
    # A few karasu ADRs are written in English with Japanese titles only.
    assert ja["ja"] >= 220
    assert en == {"en": 400}


def test_kuma_reused_numbers_get_unique_ids() -> None:
    adrs, errors = load_adr_folder(CORPORA / "kumahq__kuma")
    assert not errors
    assert len(adrs) == 109
    keys = [canonical_id_key(a.adr_id) for a in adrs]
    assert len(set(keys)) == len(keys)


def test_every_corpus_folder_loads_without_errors() -> None:
    total = 0
    for folder in sorted(p for p in CORPORA.iterdir() if p.is_dir()):
        adrs, errors = load_adr_folder(folder)
        assert not errors, errors
        assert len({canonical_id_key(a.adr_id) for a in adrs}) == len(adrs)
        total += len(adrs)
    assert total == 644


# --- the copies in the repository are still their sources ---------------------------------------------


@functools.cache
def _query_texts(corpus: str) -> dict[str, str]:
    lines = (CORPORA / corpus / "qrels.jsonl").read_text(encoding="utf-8").splitlines()
    return {q["query"].rsplit("/", 1)[-1]: q["query_text"] for q in map(json.loads, lines)}


def _source(manifest: str, rel: str) -> bytes:
    """The bytes in shared/ that the copy `rel` listed in `manifest` was taken from."""
    if manifest == "github/SHA256SUMS":
        return (SHARED / "github-payloads" / rel).read_bytes()
    if manifest == "seeds/SHA256SUMS":
        return (SEEDS / rel).read_bytes()
    if manifest == "corpora/SHA256SUMS":
        return (CORPORA / rel).read_bytes()
    kind, rest = rel.split("/", 1)  # golden-library.sha256: paths below prompts/_golden/adrs/
    if kind == "queries":
        corpus, name = rest.split("/", 1)
        return _query_texts(corpus)[name].encode("utf-8")
    return (SHARED / kind / rest).read_bytes()


@pytest.mark.parametrize(
    "manifest", ["github/SHA256SUMS", "seeds/SHA256SUMS", "corpora/SHA256SUMS", "golden-library.sha256"]
)
def test_recorded_hashes_are_the_hashes_of_the_sources(manifest: str) -> None:
    lines = (FIXTURES / manifest).read_text(encoding="utf-8").splitlines()
    assert lines
    for digest, rel in (line.split("  ", 1) for line in lines):
        assert hashlib.sha256(_source(manifest, rel)).hexdigest() == digest, f"{manifest}: {rel}"
