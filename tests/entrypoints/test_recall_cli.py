"""`adr-review recall --file … --json`: extractive offline, through the model with a key (fake API)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adr_review.cli import main
from adr_review.core.text import contains_verbatim
from tests.fakes.messages_server import FakeMessagesServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROPOSALS = ["0008-adopt-kafka-for-order-events.md", "0009-session-store-redis.md"]
KEYS = {"mode", "citations", "candidates", "empty_reason", "dropped", "usage", "errors", "diagnostics"}
CITATION_KEYS = {
    "adr_id",
    "path",
    "title",
    "status",
    "relevance",
    "relevance_reason",
    "superseded_by",
    "quoted_from",
}


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "RECALL_ENABLED", "ADR_REVIEW_RECALL_ENABLED"):
        monkeypatch.delenv(name, raising=False)


def recall_json(
    capsys: pytest.CaptureFixture[str], store: Path, proposal: str, *extra: str
) -> dict[str, Any]:
    argv = ["recall", "--adr-dir", str(EXAMPLES / "adr"), "--store", str(store)]
    assert main([*argv, "--file", str(EXAMPLES / "proposals" / proposal), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def summaries() -> dict[str, str]:
    from adr_review.adapters.adr_files import load_adr_folder

    adrs, _ = load_adr_folder(EXAMPLES / "adr")
    return {a.adr_id: a.summary for a in adrs}


@pytest.mark.parametrize("proposal", PROPOSALS)
def test_offline_recall_is_extractive_and_verbatim(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, proposal: str
) -> None:
    out = recall_json(capsys, tmp_path / "store", proposal)
    assert set(out) == KEYS
    assert out["mode"] == "extractive" and out["usage"]["calls"] == 0 and out["dropped"] == {}
    assert 1 <= len(out["citations"]) <= 5 and out["empty_reason"] is None
    by_id = summaries()
    for c in out["citations"]:
        assert set(c) == CITATION_KEYS
        assert contains_verbatim(by_id[c["adr_id"]], c["relevance_reason"]), c
        assert c["quoted_from"] == "candidate"
    assert out["candidates"] and "adr_id" in out["candidates"][0]


def test_the_superseded_outbox_adr_names_its_successor(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = recall_json(capsys, tmp_path / "store", PROPOSALS[0])
    outbox = next(c for c in out["citations"] if c["adr_id"] == "ADR-0002")
    assert outbox["status"] == "superseded" and outbox["superseded_by"] == "ADR-0005"


def test_with_a_key_recall_goes_through_the_model(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_anthropic: FakeMessagesServer,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    out = recall_json(capsys, tmp_path / "store", PROPOSALS[1])
    assert out["mode"] == "llm" and fake_anthropic.count("recall-pre-gate") == 1
    assert [c["adr_id"] for c in out["citations"]] == ["ADR-0004", "ADR-0007"]  # the fake cites the top 2
    assert out["usage"]["calls"] == 1 and out["usage"]["input_tokens"] > 0 and out["usage"]["cost_usd"] > 0
    assert out["diagnostics"]["recall"]["model"] == "claude-haiku-5-5"

    again = recall_json(capsys, tmp_path / "store", PROPOSALS[1], "--offline")
    assert again["mode"] == "extractive" and fake_anthropic.count() == 1


def test_a_failing_model_falls_back_to_extractive_exit_0(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeMessagesServer() as server:
        url = server.base_url  # closed: connection refused
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    out = recall_json(capsys, tmp_path / "store", PROPOSALS[0])
    assert out["mode"] == "extractive" and out["citations"]  # still useful, and says why
    assert out["errors"] and out["candidates"] and out["diagnostics"]["recall"]["fallback_from"] == "llm"


def test_the_kill_switch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALL_ENABLED", "false")
    out = recall_json(capsys, tmp_path / "store", PROPOSALS[0])
    assert (out["mode"], out["citations"], out["empty_reason"]) == ("disabled", [], "disabled")


def test_human_output_shows_mode_citations_and_candidates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["recall", "--adr-dir", str(EXAMPLES / "adr"), "--store", str(tmp_path / "s")]
    assert main([*argv, "--file", str(EXAMPLES / "proposals" / PROPOSALS[1])]) == 0
    out = capsys.readouterr().out
    assert out.startswith("recall (extractive): ")
    assert "ADR-0004" in out and "embedding: offline-hash" in out


def test_human_output_marks_a_reason_quoted_from_the_proposal() -> None:
    from adr_review.core.results import Citation, RecallResult, Usage
    from adr_review.entrypoints.commands.recall import format_citations

    def cite(adr_id: str, reason: str, source: Any) -> Citation:
        return Citation(adr_id, f"{adr_id}.md", "T", "accepted", "med", reason, quoted_from=source)

    recall = RecallResult(
        "llm",
        (
            cite("ADR-0001", "Its own words.", "candidate"),
            cite("ADR-0002", "The proposal's words.", "proposal"),
        ),
        (),
        None,
        {},
        Usage(),
    )
    reasons = [ln.strip() for ln in format_citations(recall).splitlines() if ln.startswith("      ")]
    assert reasons == ['"Its own words."', '"The proposal\'s words." (from this proposal)']


def test_a_refused_key_prints_the_extractive_recall_and_exits_1_naming_the_key(
    fake_anthropic: FakeMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The real adapter against the fake Messages API answering 401: recall falls back to extractive
    and prints it, and the command fails, so a wrong key never looks like a quiet success."""
    from tests.fakes.messages_server import Reply

    fake_anthropic.set_default("*", Reply(status=401))
    fake_anthropic.set_default("recall-pre-gate", Reply(status=401))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    argv = ["recall", "--adr-dir", str(EXAMPLES / "adr"), "--store", str(tmp_path / "s")]
    code = main([*argv, "--file", str(EXAMPLES / "proposals" / "0008-adopt-kafka-for-order-events.md")])
    captured = capsys.readouterr()
    assert code == 1 and "extractive" in captured.out
    assert "refused the credentials" in captured.err and "ANTHROPIC_API_KEY" in captured.err
