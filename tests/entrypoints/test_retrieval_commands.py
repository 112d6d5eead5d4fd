"""`adr-review index` and `adr-review recall` on a real folder, offline."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from adr_review.cli import main

ADRS = {
    "0001-record-decisions.md": ("Record architecture decisions", "We record decisions as ADRs in markdown."),
    "0002-use-postgres.md": (
        "Use PostgreSQL for orders",
        "Orders need transactions; PostgreSQL stores them.",
    ),
    "0003-kafka-events.md": (
        "Publish domain events on Kafka",
        "Services react to order changes through Kafka topics.",
    ),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "adr"
    d.mkdir()
    for name, (title, body) in ADRS.items():
        (d / name).write_text(
            f"# {title}\n\n## Status\n\nAccepted\n\n## Context\n\n{body}\n\n## Decision\n\n{title}.\n"
        )
    return d


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_index_prints_counts_and_is_incremental(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "store")
    first = run_json(capsys, "index", "--adr-dir", str(folder), "--store", store, "--json")
    assert (first["added"], first["updated"], first["removed"], first["unchanged"]) == (3, 0, 0, 0)
    assert first["embedding"] == "offline-hash" and first["embedding_failed"] is False
    (folder / "0002-use-postgres.md").write_text("# Use PostgreSQL 16 for orders\n\n## Context\n\nUpgrade.\n")
    (folder / "0001-record-decisions.md").unlink()
    second = run_json(capsys, "index", "--adr-dir", str(folder), "--store", store, "--json")
    assert (second["added"], second["updated"], second["removed"], second["unchanged"]) == (0, 1, 1, 1)
    assert main(["index", "--adr-dir", str(folder), "--store", store]) == 0
    out = capsys.readouterr().out
    assert "indexed with offline-hash: 0 added, 0 updated, 0 removed, 2 unchanged" in out


def test_index_rejects_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "--adr-dir", str(tmp_path / "nope")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_recall_json_contract_and_on_the_fly_indexing(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_json(
        capsys,
        "recall", "--adr-dir", str(folder), "--store", str(tmp_path / "store"),
        "--text", "Emit order events to Kafka topics after the PostgreSQL transaction commits", "--json",
    )  # fmt: skip
    assert out["empty_reason"] is None
    first = out["candidates"][0]
    assert {
        "adr_id",
        "path",
        "title",
        "status",
        "score",
        "qualified",
        "dense",
        "bm25",
        "bm25_rel",
        "why",
    } <= set(first)
    assert first["path"] in {"0003-kafka-events.md", "0002-use-postgres.md"}
    assert first["status"] == "accepted" and first["qualified"] is True
    assert out["diagnostics"]["embedding"] == "offline-hash"
    assert out["diagnostics"]["sync"]["added"] == 3  # no index yet: built on the fly


def test_recall_from_a_file_in_the_folder_never_returns_itself(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal = folder / "0004-outbox.md"
    proposal.write_text(
        "# Transactional outbox for Kafka events\n\n## Status\n\nProposed\n\n## Context\n\n"
        "Order changes must reach Kafka topics exactly when the PostgreSQL transaction commits.\n"
    )
    out = run_json(
        capsys,
        "recall",
        "--adr-dir",
        str(folder),
        "--store",
        str(tmp_path / "s"),
        "--file",
        str(proposal),
        "--json",
        "--top",
        "2",
    )
    paths = [c["path"] for c in out["candidates"]]
    assert "0004-outbox.md" not in paths and len(paths) == 2
    assert paths[0] == "0003-kafka-events.md"


def test_recall_explain_shows_every_score(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "recall",
        "--adr-dir",
        str(folder),
        "--store",
        str(tmp_path / "s"),
        "--text",
        "Kafka domain events",
        "--explain",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "embedding: offline-hash" in out
    assert "dense " in out and "bm25_rel " in out and "title " in out and "fused " in out
    assert "qualified: " in out
    assert "fused = " in out  # the formula with the knobs in force


def test_recall_says_why_nothing_came_back(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = run_json(
        capsys, "recall", "--adr-dir", str(empty), "--store", str(tmp_path / "s"), "--text", "Kafka", "--json"
    )
    assert out["candidates"] == [] and out["empty_reason"] == "empty_index"
    out = run_json(
        capsys,
        "recall",
        "--adr-dir",
        str(folder),
        "--store",
        str(tmp_path / "s"),
        "--text",
        " ... ",
        "--json",
    )
    assert out["empty_reason"] == "empty_input"


def test_recall_with_a_failing_embedding_warns_and_stays_lexical(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    argv = [
        "recall",
        "--adr-dir",
        str(folder),
        "--store",
        str(tmp_path / "s"),
        "--text",
        "Kafka domain events",
    ]
    assert main([*argv, "--embedding", "sentence-transformers:some/model", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["diagnostics"]["embedding_failed"] is True
    assert out["candidates"][0]["path"] == "0003-kafka-events.md" and out["candidates"][0]["dense"] is None
    assert "WARNING: embedding sentence-transformers:some/model failed" in captured.err


class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.text = ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass


def test_progress_is_a_bar_on_a_terminal_and_plain_lines_otherwise() -> None:
    from adr_review.entrypoints.commands.common import progress_reporter

    tty, log = _Stream(True), _Stream(False)
    for stream in (tty, log):
        report = progress_reporter("index", stream)  # type: ignore[arg-type]
        for done in range(0, 101, 10):
            report(done, 100)
    assert "\r" in tty.text and "[###" in tty.text and tty.text.endswith("s)\n")
    lines = log.text.splitlines()
    assert "\r" not in log.text and 2 <= len(lines) <= 6
    assert lines[0] == "index: embedded 0/100 chunks" and lines[-1] == "index: embedded 100/100 chunks"
