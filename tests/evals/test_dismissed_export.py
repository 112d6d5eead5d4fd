"""Dismissed findings exported as negative golden cases (`adr-review report --export-dismissed`): the
case the golden eval reads, its origin, the ADR copied into the library, and the eval failing a
recorded answer that raises the dismissed finding again (and passing one that does not)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.cli import main
from adr_review.core.comments import GUARD_MARKER_PATH
from adr_review.core.feedback import Ledger, Revision, Shown
from adr_review.core.outcomes import FindingOutcome
from adr_review.evals.golden.cases import RECORDING_SUFFIX, load_cases
from adr_review.evals.golden.dismissed import library_path_for, negative_case, prompt_for
from adr_review.evals.golden.runner import case_key
from adr_review.evals.golden.suites import suite_for
from adr_review.prompts import PROMPTS_DIR, load_prompt
from tests.evals.test_prompt_eval import case, run_eval

PROMPT = "blindspot-premortem"
SOURCE_CASE = "en-cometbft-080-reverse-sync"  # a committed case: its ADR and its recorded answer
REPO, PR, PATH = "acme/chain", 12, "docs/adr/adr-080-reverse-sync.md"


@pytest.fixture
def prompts_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, dest)
    return dest


def _source(prompts_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    folder = prompts_dir / PROMPT / "golden"
    case_data = yaml.safe_load((folder / f"{SOURCE_CASE}.case.yaml").read_text(encoding="utf-8"))
    recording = json.loads((folder / f"{SOURCE_CASE}{RECORDING_SUFFIX}").read_text(encoding="utf-8"))
    return case_data, recording


def test_only_dismissals_with_a_reason_become_cases() -> None:
    base = FindingOutcome(REPO, PR, PATH, "abcd1234", "high", "privacy", "t", 0.0)
    assert negative_case(base, "2026-12-01") is None
    assert negative_case(FindingOutcome(**{**base.__dict__, "dismissed": True}), "2026-12-01") is None
    made = negative_case(FindingOutcome(**{**base.__dict__, "dismissed": True, "reason": "no"}), "2026-12-01")
    assert made is not None and made.prompt == "blindspot-devils-advocate" and made.data["input"]["seed"] == 0


def test_a_dismissed_guard_answer_is_no_blind_spot_case() -> None:
    """A guard answer's row (the guard comment's marker path, its verdict as severity) is not a finding
    of a blind-spot prompt: it would otherwise land in blindspot-devils-advocate's golden folder."""
    answer = FindingOutcome(
        REPO, PR, GUARD_MARKER_PATH, "abcd1234", "conflicts", "guard", "ADR-0001: Use PostgreSQL", 0.0,
        dismissed=True, reason="the ADR was superseded",
    )  # fmt: skip
    assert negative_case(answer, "2026-12-01") is None


@pytest.mark.parametrize(
    ("perspective", "prompt"),
    [
        ("premortem/technical", "blindspot-premortem"),
        ("premortem", "blindspot-premortem"),
        ("adjacent_domain", "blindspot-adjacent-domain"),
        ("devils_advocate", "blindspot-devils-advocate"),
        ("privacy", "blindspot-devils-advocate"),
    ],
)
def test_the_case_goes_to_the_critic_that_raised_it(perspective: str, prompt: str) -> None:
    assert prompt_for(perspective) == prompt


@pytest.mark.parametrize(
    ("repo", "path", "want"),
    [
        ("Acme/Shop", "docs/adr/1.md", "feedback/acme__shop/docs/adr/1.md"),
        ("a/b", "../../etc/passwd", "feedback/a__b/etc/passwd"),
        ("a/b.c", "./x//y.md", "feedback/a__b-c/x/y.md"),
    ],
)
def test_library_path_stays_in_the_library(repo: str, path: str, want: str) -> None:
    assert library_path_for(repo, path) == want


def test_an_exported_case_fails_an_answer_that_raises_the_dismissed_finding(
    prompts_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source_case, recording = _source(prompts_copy)
    dismissed_title = recording["data"]["scenarios"][0]["title"]
    checkout = tmp_path / "checkout"
    (checkout / PATH).parent.mkdir(parents=True)
    library_adr = prompts_copy / "_golden" / "adrs" / source_case["input"]["adr"]
    shutil.copyfile(library_adr, checkout / PATH)
    store_path = tmp_path / "state.sqlite3"
    with SqliteStateStore(store_path) as store:
        shown = (Shown("abcd1234", "high", "premortem/technical", dismissed_title),)
        store.record_ledger(REPO, PR, PATH, Ledger().add(Revision("1" * 16, shown, 0.1)))
        store.record_dismissal(REPO, PR, "abcd1234", "bob", "our rollback plan covers this")
        store.close()

    args = ["report", "--store", str(store_path), "--export-dismissed", str(prompts_copy)]
    assert main([*args, "--adr-dir", str(checkout)]) == 0
    err = capsys.readouterr().err
    assert "1 written, 0 already there" in err and f"--prompt {PROMPT} --live --record" in err
    cases, errors = load_cases(prompts_copy / PROMPT / "golden")
    assert errors == []
    [exported] = [c for c in cases if c.origin is not None]
    assert exported.id == "dismissed-acme-chain-12-abcd1234"
    assert exported.origin == {
        "repo": REPO,
        "pr": PR,
        "path": PATH,
        "finding_id": "abcd1234",
        "perspective": "premortem/technical",
        "severity": "high",
        "title": dismissed_title,
        "dismissed_by": "bob",
        "reason": "our rollback plan covers this",
    }
    copied = prompts_copy / "_golden" / "adrs" / exported.input["adr"]
    assert copied.read_bytes() == library_adr.read_bytes()

    # Exporting again keeps the case (a maintainer may have refined its phrases).
    assert main([*args]) == 0
    assert "0 written, 1 already there (kept)" in capsys.readouterr().err

    # The committed answer, keyed to the exported case's request: it raises the dismissed finding.
    prompt = load_prompt(PROMPT, prompts_copy)
    suite = suite_for(PROMPT)
    assert suite is not None
    key = case_key(exported, prompt, suite)
    rec_path = prompts_copy / PROMPT / "golden" / f"{exported.id}{RECORDING_SUFFIX}"
    rec_path.write_text(
        json.dumps({**recording, "case": exported.id, "key": key, "answered_key": key}), encoding="utf-8"
    )
    code, report = run_eval("--prompt", PROMPT, "--prompts-dir", str(prompts_copy), capsys=capsys)
    result = case(report, PROMPT, exported.id)
    assert code == 1
    assert result["failures"] == [
        f"a finding the case rules out is present (dismissed by bob: our rollback plan covers this): {dismissed_title}"
    ]

    # Without that scenario the case passes.
    data = dict(recording["data"], scenarios=recording["data"]["scenarios"][1:])
    rec_path.write_text(
        json.dumps({**recording, "case": exported.id, "key": key, "answered_key": key, "data": data}),
        encoding="utf-8",
    )
    _code, report = run_eval("--prompt", PROMPT, "--prompts-dir", str(prompts_copy), capsys=capsys)
    assert case(report, PROMPT, exported.id)["failures"] == []


def test_without_a_checkout_the_command_lists_the_adr_files_to_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_path = tmp_path / "state.sqlite3"
    with SqliteStateStore(store_path) as store:
        shown = (Shown("abcd1234", "high", "privacy", "A title"),)
        store.record_ledger(REPO, PR, PATH, Ledger().add(Revision("1" * 16, shown, 0.1)))
        store.record_dismissal(REPO, PR, "abcd1234", "bob", "not relevant")
        store.close()
    out = tmp_path / "prompts"
    assert main(["report", "--store", str(store_path), "--export-dismissed", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"copy the ADR {REPO}:{PATH} to {out}/_golden/adrs/feedback/acme__chain/{PATH}" in err
    assert (
        out / "blindspot-devils-advocate" / "golden" / "dismissed-acme-chain-12-abcd1234.case.yaml"
    ).is_file()
