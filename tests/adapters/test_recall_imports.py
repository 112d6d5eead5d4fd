"""A recall process on a fresh index reads the index mirror and never imports chromadb (issue 25,
item 7: `import chromadb` alone was half of a 644-ADR recall process). The probe runs the real CLI in
a child interpreter; the same probe after a change to the folder must see chromadb, or it proves
nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adr_review.adapters import chroma_store
from adr_review.adapters.index_open import ensure_synced, open_index_for

PROBE = (
    "import contextlib, io, sys\n"
    "from adr_review.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    code = main(sys.argv[1:])\n"
    "print('PARSE_POOL=%s' % sorted(m for m in ('multiprocessing', 'concurrent.futures') if m in sys.modules))\n"
    "print('EXIT=%s CHROMADB=%s' % (code, 'chromadb' in sys.modules))\n"
    "print('MODEL_ONLY=%s' % sorted(m for m in ('jsonschema', 'jinja2', 'pydantic_settings',"
    " 'adr_review.pipeline.structured', 'adr_review.pipeline.adr.recall_answer') if m in sys.modules))\n"
    "print('YAML=%s' % ('yaml' in sys.modules))\n"
)


def recall_in_child(folder: Path, store: Path) -> str:
    args = ["recall", "--adr-dir", str(folder), "--store", str(store), "--text", "Kafka events", "--offline"]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return out.strip().splitlines()[-3]


@pytest.mark.real_process
def test_an_offline_recall_on_a_fresh_index_never_imports_what_only_a_model_needs(tmp_path: Path) -> None:
    """jsonschema checks model answers only (0.15 s of a recall process's imports; chromadb, which a
    sync opens, imports it too), jinja2 renders prompts only for a model (0.1 s), and pydantic-settings
    reads the settings only a model call needs (0.1 s; an offline recall reads its two values without it);
    the structured-call step and the recall answer's checks are the model's path too."""
    folder = tmp_path / "adr"
    folder.mkdir()
    write_settled(folder / "0001-kafka.md", "# 1. Use Kafka for events\n\n## Context\n\nDomain events.\n")
    ensure_synced(open_index_for(folder, tmp_path / "s"), folder)
    args = [
        "recall",
        "--adr-dir",
        str(folder),
        "--store",
        str(tmp_path / "s"),
        "--text",
        "Kafka events",
        "--offline",
    ]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip().splitlines()[-2] == "MODEL_ONLY=[]"
    # the parser's process pool (parse_pool.py) is for a large folder to parse, never for a recall
    assert out.strip().splitlines()[-4] == "PARSE_POOL=[]"


@pytest.mark.real_process
def test_pyyaml_is_imported_only_for_front_matter(tmp_path: Path) -> None:
    """PyYAML reads front matter and prompts' meta: a recall of ADRs without front matter
    loads none of it; the same probe on a proposal with front matter sees it."""
    folder = tmp_path / "adr"
    folder.mkdir()
    write_settled(folder / "0001-kafka.md", "# 1. Use Kafka for events\n\n## Context\n\nDomain events.\n")
    ensure_synced(open_index_for(folder, tmp_path / "s"), folder)
    base = [sys.executable, "-c", PROBE, "recall", "--adr-dir", str(folder), "--store", str(tmp_path / "s")]
    for text, yaml in (("Kafka events", False), ("---\nstatus: proposed\n---\n# Kafka events\n", True)):
        done = subprocess.run(
            [*base, "--text", text, "--offline"], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == f"YAML={yaml}"


def write_settled(path: Path, text: str) -> None:
    """A file written a minute ago: the parse cache trusts only mtimes older than its racy window."""
    path.write_text(text)
    old = time.time() - 60
    os.utime(path, (old, old))


@pytest.mark.real_process
def test_a_recall_on_a_fresh_index_does_not_import_chromadb(tmp_path: Path) -> None:
    folder, store = tmp_path / "adr", tmp_path / "store"
    folder.mkdir()
    write_settled(folder / "0001-kafka.md", "# 1. Use Kafka for events\n\n## Context\n\nDomain events.\n")
    write_settled(folder / "0002-pg.md", "# 2. Use PostgreSQL\n\n## Context\n\nOrders need transactions.\n")
    ensure_synced(open_index_for(folder, store), folder)  # the index and its mirror are current

    assert recall_in_child(folder, store) == "EXIT=0 CHROMADB=False"

    write_settled(folder / "0003-redis.md", "# 3. Use Redis for caching\n\n## Context\n\nLatency.\n")
    assert recall_in_child(folder, store) == "EXIT=0 CHROMADB=True"  # a sync opens the collection
    assert recall_in_child(folder, store) == "EXIT=0 CHROMADB=False"  # and leaves the mirror fresh


def test_only_an_embedded_store_trusts_its_mirror_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a Chroma server other hosts write the collection: a no-op sync asks it (and opens the client
    when the index opens, so an unreachable server is reported there)."""
    folder, store = tmp_path / "adr", tmp_path / "store"
    folder.mkdir()
    write_settled(folder / "0001-kafka.md", "# 1. Use Kafka for events\n\n## Context\n\nDomain events.\n")
    ensure_synced(open_index_for(folder, store), folder)
    fresh = open_index_for(folder, store)
    assert fresh._fresh_mirror() is not None and fresh._chroma is None  # nothing of Chroma opened

    opened: list[Path] = []

    def opening(path: Path) -> tuple[None, None]:
        opened.append(path)
        return None, None

    monkeypatch.setattr(chroma_store, "open_chroma_client", opening)
    monkeypatch.setattr(chroma_store, "_server", ("http://chroma.invalid:8000", None))
    on_server = open_index_for(folder, store)
    assert opened == [store] and on_server._fresh_mirror() is None
