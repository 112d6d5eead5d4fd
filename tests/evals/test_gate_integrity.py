"""The gate measures the prompts, it cannot be rubber-stamped: a rewritten prompt does not pass on re-keyed
answers, must_find ignores quoted text, precision@k, the quote and language checks, the Judge ablation,
and several live samples with their spread (through the fake Messages API and the real anthropic client).

Every test works on a copy of prompts/ (`--prompts-dir`), never on the committed files.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adr_review.entrypoints.commands import eval_prompts
from adr_review.evals.golden.cases import RECORDING_SUFFIX
from adr_review.prompts import PROMPTS_DIR
from tests.evals.test_prompt_eval import by_name, case, edit_recording, failed_checks, run_eval
from tests.fakes.messages_server import FakeMessagesServer, Reply


@pytest.fixture
def prompts_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, dest)
    return dest


# Rule 4 of the recall prompt as committed (verbatim quotes) and rule 5 (ADR text is data, not orders).
RULE_4 = re.compile(r"^4\. relevance_reason must be a verbatim quote.*?(?=^5\. )", re.DOTALL | re.MULTILINE)
RULE_5 = re.compile(r"^5\. Everything between <proposal>.*?(?=^\S)", re.DOTALL | re.MULTILINE)


def rewrite_recall_prompt(prompts_dir: Path) -> None:
    """The regression the gate once let through: "explain in your own words", injection rule deleted."""
    path = prompts_dir / "recall-pre-gate" / "prompt.md"
    text = path.read_text(encoding="utf-8")
    assert RULE_4.search(text) and RULE_5.search(text), "the committed prompt changed: update this test"
    text = RULE_4.sub("4. relevance_reason: explain in your own words why a reviewer should read it.\n", text)
    path.write_text(RULE_5.sub("", text), encoding="utf-8")


def test_the_rewritten_prompt_no_longer_passes_the_gate(
    prompts_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrite_recall_prompt(prompts_copy)
    args = ("--prompt", "recall-pre-gate", "--prompts-dir", str(prompts_copy))

    code, report = run_eval(*args, capsys=capsys)  # every recording answers the old prompt
    assert code == 1
    assert {c["status"] for c in by_name(report, "recall-pre-gate")["cases"]} == {"stale"}

    # Re-keying the hand-written answers used to make this green. Now they are marked, and it fails.
    code, report = run_eval(*args, "--rekey-hand-written", capsys=capsys)
    recall = by_name(report, "recall-pre-gate")
    assert code == 1 and not recall["passed"]
    assert sorted(recall["rekeyed"]) == sorted(c["id"] for c in recall["cases"])
    assert all(c["status"] == "ok" and c["rekeyed"] for c in recall["cases"])  # scored, but unverified

    # ...and it stays failed on every later replay, with the way out spelled out.
    capsys.readouterr()
    parser = argparse.ArgumentParser()
    eval_prompts.configure(parser)
    assert eval_prompts.run(parser.parse_args(list(args))) == 1
    text = capsys.readouterr().out
    assert "re-keyed: UNVERIFIED" in text and "The gate does not pass on them" in text
    assert "--live --record" in text and "Deleting the `rekeyed` note verifies nothing" in text
    for path in (prompts_copy / "recall-pre-gate" / "golden").glob(f"*{RECORDING_SUFFIX}"):
        note = json.loads(path.read_text(encoding="utf-8"))["rekeyed"]
        assert note["from_key"].startswith("sha256:") and note["from_prompt_files_hash"]


def test_rekeying_twice_keeps_the_first_origin(
    prompts_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrite_recall_prompt(prompts_copy)
    args = ("--prompt", "recall-pre-gate", "--rekey-hand-written", "--prompts-dir", str(prompts_copy))
    run_eval(*args, capsys=capsys)
    path = next((prompts_copy / "recall-pre-gate" / "golden").glob(f"*{RECORDING_SUFFIX}"))
    first = json.loads(path.read_text(encoding="utf-8"))["rekeyed"]
    prompt_md = prompts_copy / "recall-pre-gate" / "prompt.md"
    prompt_md.write_text(prompt_md.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    run_eval(*args, capsys=capsys)
    assert json.loads(path.read_text(encoding="utf-8"))["rekeyed"]["from_key"] == first["from_key"]


# --- what the metrics look at -------------------------------------------------------------------------


def test_generic_scenarios_that_quote_the_right_paragraphs_find_nothing(
    prompts_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Four off-target scenarios whose quotes are exactly the passages the expected findings are about
    # (and whose gaps mention the key phrases only inside quote marks) used to score 2/2.
    case_id = "ja-karasu-byok-ai"

    def generic(rec: dict[str, Any]) -> None:
        scenarios = rec["data"]["scenarios"]
        quotes = [s["quote"] for s in scenarios]
        rec["data"]["scenarios"] = [
            dict(
                s,
                title=f"想定外の問題が起きる ({i})",
                scenario="何かがうまくいかなかった。",
                gap=f"「{quotes[i]}」とあるが、その影響は不明。",
                suggested_action="よく検討する。",
                dedupe_group=f"generic-{i}",
            )
            for i, s in enumerate(scenarios[:4])
        ]

    edit_recording(prompts_copy, "blindspot-premortem", case_id, generic)
    code, report = run_eval(
        "--prompt", "blindspot-premortem", "--prompts-dir", str(prompts_copy), capsys=capsys
    )
    result = case(report, "blindspot-premortem", case_id)
    assert result["counts"]["expected_findings"] == 2
    assert result["counts"].get("expected_findings_found", 0) == 0  # was 2/2 when evidence counted
    assert code == 1


def test_a_fabricated_quote_lowers_the_verified_rate_and_fails_the_gate(
    prompts_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def fabricate(rec: dict[str, Any]) -> None:
        for s in rec["data"]["scenarios"]:
            s["quote"] = s["quote"] + " (and the team will review it weekly)"

    edit_recording(prompts_copy, "blindspot-premortem", "en-hydra-024-event-sourcing", fabricate)
    code, report = run_eval(
        "--prompt", "blindspot-premortem", "--prompts-dir", str(prompts_copy), capsys=capsys
    )
    pm = by_name(report, "blindspot-premortem")
    assert code == 1
    assert pm["metrics"]["quote_verified_rate"] < 0.9
    assert {"quote_verified_rate"} <= failed_checks(pm)


def test_the_output_language_is_checked(prompts_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The case sets `language: en` for a Japanese ADR; an answer written in Japanese anyway fails.
    case_id = "ja-karasu-byok-ai-language-en"
    japanese = json.loads(
        (prompts_copy / "blindspot-premortem" / "golden" / f"ja-karasu-byok-ai{RECORDING_SUFFIX}").read_text(
            encoding="utf-8"
        )
    )["data"]
    edit_recording(prompts_copy, "blindspot-premortem", case_id, lambda rec: rec.update(data=japanese))
    code, report = run_eval(
        "--prompt", "blindspot-premortem", "--prompts-dir", str(prompts_copy), capsys=capsys
    )
    pm = by_name(report, "blindspot-premortem")
    assert code == 1
    assert pm["metrics"]["output_language_rate"] < 0.95
    assert "output_language_rate" in failed_checks(pm)
    assert any("not written in en" in f for f in case(report, "blindspot-premortem", case_id)["failures"])


def test_the_judge_ablation_pair(prompts_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden = prompts_copy / "blindspot-judge" / "golden"
    kept = json.loads(
        (golden / f"en-cometbft-080-reverse-sync{RECORDING_SUFFIX}").read_text(encoding="utf-8")
    )
    # The unmodified case's answer, in the ablated case: its exclusion quotes the removed consequence,
    # which is no longer there, so it is not honoured and the finding comes back.
    edit_recording(
        prompts_copy,
        "blindspot-judge",
        "en-cometbft-080-reverse-sync-ablated-negative",
        lambda r: r.update(data=kept["data"]),
    )
    code, report = run_eval("--prompt", "blindspot-judge", "--prompts-dir", str(prompts_copy), capsys=capsys)
    judge = by_name(report, "blindspot-judge")
    ablated = case(report, "blindspot-judge", "en-cometbft-080-reverse-sync-ablated-negative")
    assert ablated["counts"]["exclusions_unverified"] == 1
    assert ablated["counts"]["expected_findings_found"] == ablated["counts"]["expected_findings"]  # restored
    assert code == 1 and "exclusions_unverified" in failed_checks(judge)
    # The committed pair, as recorded: excluded with the passage when it is there, a finding when not.
    _code, clean = run_eval("--prompt", "blindspot-judge", capsys=capsys)
    original = case(clean, "blindspot-judge", "en-cometbft-080-reverse-sync")
    assert original["counts"]["expected_exclusions_found"] == 1
    assert case(clean, "blindspot-judge", "en-cometbft-080-reverse-sync-ablated-negative")["passed"]


def test_precision_at_k_counts_citations_the_qrels_do_not_list(
    prompts_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ja-karasu-diff-cli: add a verbatim citation of a candidate the query does not reference (a distractor).
    def add_distractor(rec: dict[str, Any]) -> None:
        rec["data"]["citations"].append(
            {
                "adr_id": "ADR-20260404-06",
                "relevance": "low",
                "relevance_reason": "ローカル確認と公開ホスティングを同一コードベースで賄える。",
            }
        )

    _code, before = run_eval("--prompt", "recall-pre-gate", "--prompts-dir", str(prompts_copy), capsys=capsys)
    edit_recording(prompts_copy, "recall-pre-gate", "ja-karasu-diff-cli", add_distractor)
    _code, after = run_eval("--prompt", "recall-pre-gate", "--prompts-dir", str(prompts_copy), capsys=capsys)
    b, a = by_name(before, "recall-pre-gate")["metrics"], by_name(after, "recall-pre-gate")["metrics"]
    counts = case(after, "recall-pre-gate", "ja-karasu-diff-cli")["counts"]
    assert (
        counts["citations_kept"]
        == case(before, "recall-pre-gate", "ja-karasu-diff-cli")["counts"]["citations_kept"] + 1
    )
    assert a["precision_at_k"] < b["precision_at_k"]  # kept, verified, but not relevant in the qrels
    assert a["recall_at_k"] == b["recall_at_k"]
    assert a["relevance_low_share"] > b["relevance_low_share"]  # the relevance distribution moves too
    assert {"precision_at_k", "recall_at_k", "relevance_high_share", "relevance_med_share"} <= set(a)


# --- live: several samples per case and their spread, through the real anthropic client ----------------


def _alternating(answers: list[Any]) -> Callable[[dict[str, Any]], Reply]:
    calls = iter(range(10_000))

    def respond(_request: dict[str, Any]) -> Reply:
        return Reply(answer=answers[next(calls) % len(answers)])

    return respond


def test_live_takes_several_samples_per_case_and_reports_their_spread(
    prompts_copy: Path,
    fake_anthropic: FakeMessagesServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    golden = prompts_copy / "recall-pre-gate" / "golden"
    keep = "en-hydra-025-resource-based-api"
    for path in golden.iterdir():
        if not path.name.startswith(keep):
            path.unlink()
    good = json.loads((golden / f"{keep}{RECORDING_SUFFIX}").read_text(encoding="utf-8"))["data"]
    # The model answers well, then cites nothing, then well again: a noisy prompt.
    fake_anthropic.set_default("recall-pre-gate", _alternating([good, {"citations": []}, good]))

    args = ("--prompt", "recall-pre-gate", "--live", "--samples", "3", "--prompts-dir", str(prompts_copy))
    code, report = run_eval(*args, capsys=capsys)
    recall = by_name(report, "recall-pre-gate")
    assert fake_anthropic.count("recall-pre-gate") == 3
    assert recall["samples"] == 3
    # (samples run concurrently: which one got the empty answer is not fixed)
    assert sorted(s["counts"]["citations_returned"] for s in recall["cases"][0]["samples"]) == [0, 3, 3]
    assert recall["metrics"]["citations_returned"] == 2  # the mean over the samples
    assert (
        recall["spread"]["citations_returned"]["min"] == 0
        and recall["spread"]["citations_returned"]["max"] == 3
    )
    assert recall["spread"]["expected_citations_found"]["min"] == 0.0
    assert code == 1  # the mean misses the expected citations: one good sample does not pass a prompt

    fake_anthropic.reset()
    fake_anthropic.set_default("recall-pre-gate", _alternating([good, {"citations": []}, good]))
    capsys.readouterr()
    parser = argparse.ArgumentParser()
    eval_prompts.configure(parser)
    eval_prompts.run(parser.parse_args(list(args)))
    text = capsys.readouterr().out
    assert "3 samples per case" in text and "[0–3, sd" in text


def test_samples_need_live(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    eval_prompts.configure(parser)
    assert eval_prompts.run(parser.parse_args(["--samples", "3"])) == 2


# --- what a recording is keyed on, what counts as live, and what verifies it ---------------------------


def _statuses(report: dict[str, Any], prompt: str) -> set[str]:
    return {c["status"] for c in by_name(report, prompt)["cases"]}


@pytest.mark.parametrize(
    ("prompt", "edit", "stale"),
    [
        ("recall-pre-gate", lambda m: m["eval"]["thresholds"].update(precision_at_k=0.0), True),
        ("blindspot-judge", lambda m: m["eval"]["thresholds"].update(max_exclusions_unverified=5), True),
        ("blindspot-devils-advocate", lambda m: m.update(max_counter_arguments=1), True),  # a cap
        ("blindspot-adjacent-domain", lambda m: m.update(max_analogies=1), True),
        ("blindspot-premortem", lambda m: m["thresholds"].update(critical=125), True),  # the RPN bands
        ("recall-pre-gate", lambda m: None, False),  # rewritten by a YAML dumper: comments and layout go
    ],
)
def test_a_recording_whose_thresholds_or_caps_changed_is_stale(
    prompts_copy: Path,
    capsys: pytest.CaptureFixture[str],
    prompt: str,
    edit: Callable[[Any], None],
    stale: bool,
) -> None:
    import yaml

    path = prompts_copy / prompt / "meta.yaml"
    meta = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(meta)
    path.write_text(yaml.safe_dump(meta), encoding="utf-8")
    code, report = run_eval("--prompt", prompt, "--prompts-dir", str(prompts_copy), capsys=capsys)
    assert (code, _statuses(report, prompt)) == ((1, {"stale"}) if stale else (0, {"ok"}))


def test_a_threshold_changed_in_the_code_is_stale_too(
    prompts_copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from adr_review.evals.golden import runner

    # (every meta.yaml sets schema_valid_rate itself; a default no prompt overrides is in force)
    monkeypatch.setattr(runner, "COMMON_THRESHOLDS", {**runner.COMMON_THRESHOLDS, "max_cost_usd": 100.0})
    code, report = run_eval("--prompt", "recall-pre-gate", "--prompts-dir", str(prompts_copy), capsys=capsys)
    assert code == 1 and _statuses(report, "recall-pre-gate") == {"stale"}


@pytest.mark.parametrize(
    ("base_url", "source"),
    [
        ("https://api.anthropic.com", "live"),
        ("https://api.anthropic.com:443/", "live"),
        ("https://API.Anthropic.com./v1", "live"),
        ("https://bedrock-runtime.us-east-1.amazonaws.com", "live"),
        ("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com", "live"),
        ("https://us-east5-aiplatform.googleapis.com/v1/", "live"),
        ("https://aiplatform.googleapis.com/v1/", "live"),
        ("http://127.0.0.2:8080", "fake-server"),  # the proxy that used to be labelled live
        ("http://127.0.0.1:5000", "fake-server"),
        ("http://localhost:5000", "fake-server"),
        ("http://[::1]:5000", "fake-server"),
        ("https://api.anthropic.com@127.0.0.2/", "fake-server"),  # userinfo, not the host
        ("http://api.anthropic.com", "proxy"),  # not https
        ("https://api.anthropic.com:8443", "proxy"),
        ("https://api.anthropic.com.example.net", "proxy"),
        ("https://llm-gateway.corp.example/anthropic", "proxy"),
        ("https://evil-aiplatform.googleapis.com.example", "proxy"),
        ("https://10.0.0.5", "proxy"),
        ("https://api.anthropic.com:notaport", "proxy"),
    ],
)
def test_only_the_providers_own_api_host_is_live(base_url: str, source: str) -> None:
    from adr_review.evals.golden.cases import answer_source

    assert answer_source(base_url) == source


def test_a_live_record_through_a_proxy_at_127_0_0_2_is_not_labelled_live(
    prompts_copy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = prompts_copy / "recall-pre-gate" / "golden"
    keep = "en-hydra-025-resource-based-api"
    for path in golden.iterdir():
        if not path.name.startswith(keep):
            path.unlink()
    with FakeMessagesServer(host="127.0.0.2") as proxy:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", proxy.base_url)
        args = ("--prompt", "recall-pre-gate", "--live", "--samples", "1", "--record")
        run_eval(*args, "--prompts-dir", str(prompts_copy), capsys=capsys)
    rec = json.loads((golden / f"{keep}{RECORDING_SUFFIX}").read_text(encoding="utf-8"))
    assert (rec["source"], rec["base_url"]) == ("fake-server", proxy.base_url)
    assert rec["answered_key"] == rec["key"]  # answered (by whatever runs there), not moved
    # Relabelling it by hand does not load: the label is the one its base URL earns.
    edit_recording(prompts_copy, "recall-pre-gate", keep, lambda r: r.update(source="live"))
    code, report = run_eval("--prompt", "recall-pre-gate", "--prompts-dir", str(prompts_copy), capsys=capsys)
    assert code == 1 and _statuses(report, "recall-pre-gate") == {"unreadable"}


def test_the_label_comes_from_the_url_the_client_sends_to(monkeypatch: pytest.MonkeyPatch) -> None:
    from adr_review.evals.golden.cases import answer_source

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    _llm, url = eval_prompts._live_llm()
    assert answer_source(url) == "live"  # the SDK's default host
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://llm-gateway.corp.example")
    _llm, url = eval_prompts._live_llm()
    assert answer_source(url) == "proxy"


def test_deleting_the_note_does_not_make_a_rekeyed_recording_verified(
    prompts_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrite_recall_prompt(prompts_copy)
    args = ("--prompt", "recall-pre-gate", "--prompts-dir", str(prompts_copy))
    run_eval(*args, "--rekey-hand-written", capsys=capsys)
    for path in (prompts_copy / "recall-pre-gate" / "golden").glob(f"*{RECORDING_SUFFIX}"):
        rec = json.loads(path.read_text(encoding="utf-8"))
        assert rec["rekeyed"] and rec["answered_key"] != rec["key"]
        del rec["rekeyed"]  # what the docs used to say a person does after checking an answer
        path.write_text(json.dumps(rec, ensure_ascii=False, indent=2), encoding="utf-8")
    code, report = run_eval(*args, capsys=capsys)
    recall = by_name(report, "recall-pre-gate")
    assert code == 1 and len(recall["rekeyed"]) == len(recall["cases"])
    # Nor does deleting the answered key: a recording without one is unverified.
    for path in (prompts_copy / "recall-pre-gate" / "golden").glob(f"*{RECORDING_SUFFIX}"):
        rec = json.loads(path.read_text(encoding="utf-8"))
        del rec["answered_key"]
        path.write_text(json.dumps(rec, ensure_ascii=False, indent=2), encoding="utf-8")
    code, report = run_eval(*args, capsys=capsys)
    assert code == 1 and len(by_name(report, "recall-pre-gate")["rekeyed"]) == len(recall["cases"])


def test_a_new_hand_written_answer_is_keyed_once_and_a_recording_of_the_older_tool_is_upgraded(
    prompts_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from adr_review.evals.golden.cases import request_key
    from adr_review.evals.golden.suites import suite_for
    from adr_review.prompts import load_prompt
    from tests.evals.test_prompt_eval import first_case

    golden = prompts_copy / "recall-pre-gate" / "golden"
    new_case, old_case, noted_case = sorted(p.name[: -len(".case.yaml")] for p in golden.glob("*.case.yaml"))[
        :3
    ]
    assert new_case == first_case(prompts_copy, "recall-pre-gate")
    suite, prompt = suite_for("recall-pre-gate"), load_prompt("recall-pre-gate", prompts_copy)
    assert suite is not None

    def older_tool(rec: dict[str, Any], case_id: str) -> None:  # what main's tool wrote before this gate
        from adr_review.evals.golden.cases import load_cases

        (case_obj,) = [c for c in load_cases(golden)[0] if c.id == case_id]
        rec.update(key=request_key(suite.request(case_obj, prompt)))
        del rec["gate"], rec["answered_key"]

    edit_recording(
        prompts_copy,
        "recall-pre-gate",
        new_case,
        lambda r: [r.update(key="unkeyed"), r.pop("gate"), r.pop("answered_key")],
    )
    edit_recording(prompts_copy, "recall-pre-gate", old_case, lambda r: older_tool(r, old_case))
    edit_recording(
        prompts_copy,
        "recall-pre-gate",
        noted_case,
        lambda r: [
            older_tool(r, noted_case),
            r.update(rekeyed={"from_key": "sha256:0", "date": "2026-01-01"}),
        ],
    )
    args = ("--prompt", "recall-pre-gate", "--prompts-dir", str(prompts_copy))
    code, report = run_eval(*args, capsys=capsys)
    assert {
        c["id"]: c["status"] for c in by_name(report, "recall-pre-gate")["cases"] if c["status"] != "ok"
    } == {new_case: "stale", old_case: "stale", noted_case: "stale"}
    code, report = run_eval(*args, "--rekey-hand-written", capsys=capsys)
    assert by_name(report, "recall-pre-gate")["rekeyed"] == [noted_case]  # the older tool's note stands
    assert code == 1
