"""`adr-review blind-spots`: refuses clearly without a key; with one, runs recall + the DAG and reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adr_review.cli import main
from tests.fakes.blindspot_answers import da_answer, judge_echo_answer, pm_answer
from tests.fakes.messages_server import FakeMessagesServer, Reply, request_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SEED_002 = FIXTURES / "seeds" / "002_da59eb14823afb63.txt"
# A passage of SEED_002: the fake critics' findings quote it, so they verify against the ADR.
QUOTE = "Judge の分類はアドバイザリであり、Pipeline の pass/fail 判定には使用せず"


@pytest.fixture
def adr_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0071-blind-spots.md").write_bytes(SEED_002.read_bytes())
    return folder


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ADR_REVIEW_STORE_DIR", str(tmp_path / "store"))


def test_without_an_api_key_it_says_so_and_exits_2(adr_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["blind-spots", "--file", str(adr_dir / "0071-blind-spots.md")])
    assert code == 2
    err = capsys.readouterr().err
    assert "no Anthropic API key" in err and "ANTHROPIC_API_KEY" in err


def test_a_missing_file_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    assert main(["blind-spots", "--file", str(tmp_path / "nope.md")]) == 2
    assert "cannot read" in capsys.readouterr().err


def judge_echo(request: dict[str, Any]) -> Reply:
    return Reply(answer=judge_echo_answer(request_text(request)))


def test_with_a_key_it_runs_the_dag_and_prints_json(
    fake_anthropic: FakeMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    adr_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    fake_anthropic.set_default("blindspot-devils-advocate", Reply(answer=da_answer(quote=QUOTE)))
    fake_anthropic.set_default(
        "blindspot-premortem", Reply(answer=pm_answer(["technical", "operational"], quote=QUOTE))
    )
    fake_anthropic.set_default("blindspot-judge", Reply(fn=judge_echo))

    code = main(["blind-spots", "--file", str(adr_dir / "0071-blind-spots.md"), "--json", "--seed", "5"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["adr"]["id"] == "ADR-0071" and out["adr"]["language"] == "ja"
    blind = out["blindspots"]
    assert blind["status"] == "judged"
    assert blind["seed"] == 5 and len(blind["selected_perspectives"]) == 3
    assert blind["coverage_gaps"] == ["business_regulatory", "cognitive"]
    assert len(blind["findings"]) == 5
    assert set(blind["usage_by_node"]) == {"devils_advocate", "premortem", "judge"}
    assert out["usage"]["calls"] >= 3
    # the prompts asked for Japanese, because the ADR is Japanese
    da = fake_anthropic.calls("blindspot-devils-advocate")[0]
    assert "Japanese (日本語)" in request_text(da.request)


def test_text_report_names_findings_perspectives_and_errors(
    fake_anthropic: FakeMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    adr_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    fake_anthropic.set_default("blindspot-devils-advocate", Reply(answer=da_answer(quote=QUOTE)))
    fake_anthropic.set_default("blindspot-premortem", Reply(status=400))
    fake_anthropic.set_default("blindspot-judge", Reply(fn=judge_echo))

    code = main(["blind-spots", "--file", str(adr_dir / "0071-blind-spots.md"), "--max-findings", "2"])
    assert code == 0  # advisory: a degraded run is still a successful command
    out = capsys.readouterr().out
    assert out.startswith("ADR-0071: ")
    assert "Blind spots: judged" in out
    assert "perspectives: " in out and "(seed " in out and "(weight " in out
    assert "[high/revise_adr] No cost ceiling" in out
    assert "not shown: 1 beyond the cap" in out
    assert "error in premortem: llm_error: http_error: HTTP 400" in out


def test_recall_runs_over_the_folder_and_its_citations_reach_the_critics(
    fake_anthropic: FakeMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus = FIXTURES / "corpora" / "cardano-scaling__hydra"
    folder = tmp_path / "hydra"
    folder.mkdir()
    for src in sorted(corpus.glob("*.md"))[:12]:
        (folder / src.name).write_bytes(src.read_bytes())
    proposal = sorted(folder.glob("*.md"))[-1]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    fake_anthropic.set_default("blindspot-devils-advocate", Reply(answer=da_answer()))
    fake_anthropic.set_default("blindspot-premortem", Reply(answer=pm_answer()))
    fake_anthropic.set_default("blindspot-judge", Reply(fn=judge_echo))

    assert main(["blind-spots", "--file", str(proposal), "--adr-dir", str(folder), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    recall = out["recall"]
    assert recall is not None and recall["mode"] == "llm"
    cited = [c["adr_id"] for c in recall["citations"]]
    assert cited, recall  # the fake recall model cites the first candidates it is shown
    assert out["adr"]["id"] not in cited
    for prompt in ("blindspot-devils-advocate", "blindspot-premortem"):
        text = request_text(fake_anthropic.calls(prompt)[0].request)
        assert all(adr_id in text for adr_id in cited), prompt
    assert fake_anthropic.count("recall-pre-gate") == 1
    assert out["usage"]["calls"] == 4


def test_a_refused_key_prints_the_report_and_exits_1_naming_the_key(
    fake_anthropic: FakeMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    adr_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_anthropic.set_default("*", Reply(status=401))
    for prompt in ("recall-pre-gate", "blindspot-devils-advocate", "blindspot-premortem", "blindspot-judge"):
        fake_anthropic.set_default(prompt, Reply(status=401))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-wrong")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    store = tmp_path / "own-store"
    code = main(["blind-spots", "--file", str(adr_dir / "0071-blind-spots.md"), "--store", str(store)])
    captured = capsys.readouterr()
    assert code == 1 and "authentication_error" in captured.out
    assert "refused the credentials" in captured.err and "ANTHROPIC_API_KEY" in captured.err
    assert store.is_dir()  # --store is the index folder, as for `index` and `recall`
