"""What a user runs meets bad input: each case ends with one clear line on stderr (never a traceback),
a sensible exit code (0 done or degraded, 1 the run failed, 2 unusable arguments), and the rest of
the run goes on. The pipeline's own degradation (bad ADRs in a folder, bad model output) is pinned in
tests/pipeline; here it is the commands and their stores."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from adr_review.cli import main
from adr_review.entrypoints.action import run_action
from tests.entrypoints.test_action import Harness, h, open_pr  # noqa: F401 - h is a fixture

ROOT = Path(__file__).resolve().parents[2]

PROPOSAL = """# 3. Switch the order database to MySQL

## Status
Proposed

## Context
Our relational database PostgreSQL costs too much to operate for the orders service.

## Decision
Move the orders tables to MySQL.
"""
PAST = {
    "0001-use-postgres.md": "# 1. Use PostgreSQL for persistence\n\n## Status\nAccepted\n\n"
    "## Context\nWe need a relational database for orders and payments.\n\n"
    "## Decision\nWe will use PostgreSQL 15 for the orders database.\n",
    "0002-use-kafka.md": "# 2. Use Kafka for events\n\n## Status\nAccepted\n\n"
    "## Context\nServices need asynchronous event delivery.\n\n## Decision\nWe use Kafka.\n",
}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the module: two good past ADRs, a proposal, and one shared index store."""
    root = tmp_path_factory.mktemp("bad-input")
    adrs = root / "adrs"
    adrs.mkdir()
    for name, text in PAST.items():
        (adrs / name).write_text(text, encoding="utf-8")
    (root / "proposal.md").write_text(PROPOSAL, encoding="utf-8")
    (root / "binary.md").write_bytes(b"# 9. x\n\x00\x01\x02" * 100)
    (root / "a-file").write_text("not a folder")
    (root / "garbage.sqlite3").write_bytes(b"this is not a SQLite database at all" * 100)
    (root / "empty").mkdir()
    return root


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch, work: Path) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ADR_REVIEW_STORE_DIR", "ADR_REVIEW_LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(work)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def store(work: Path) -> str:
    return str(work / "store")


# ------------------------------------------------------------------------------------------------
# Unusable arguments: exit 2, one line naming the argument and the cause


USAGE_CASES: list[tuple[str, list[str], str]] = [
    ("review a folder", ["review", "adrs"], "adrs: a folder, not a file"),
    ("review a missing file", ["review", "nope.md"], "nope.md: no such file"),
    (
        "review --config missing",
        ["review", "proposal.md", "--config", "nope.yml"],
        "--config: cannot read nope.yml: No such file or directory",
    ),
    (
        "review --config a folder",
        ["review", "proposal.md", "--config", "adrs"],
        "--config: cannot read adrs: Is a directory",
    ),
    (
        "recall --file missing",
        ["recall", "--adr-dir", "adrs", "--file", "nope.md"],
        "cannot read nope.md: No such file or directory",
    ),
    (
        "recall --file a folder",
        ["recall", "--adr-dir", "adrs", "--file", "adrs"],
        "cannot read adrs: Is a directory",
    ),
    ("recall --text empty", ["recall", "--adr-dir", "adrs", "--text", ""], "--text is empty"),
    ("recall --text blank", ["recall", "--adr-dir", "adrs", "--text", "  \n "], "--text is empty"),
    (
        "recall --config missing",
        ["recall", "--adr-dir", "adrs", "--text", "db", "--config", "nope.yml"],
        "--config: cannot read nope.yml",
    ),
    (
        "index --config missing",
        ["index", "--adr-dir", "adrs", "--config", "nope.yml"],
        "--config: cannot read nope.yml",
    ),
    ("index --adr-dir a file", ["index", "--adr-dir", "a-file"], "a-file: not a folder"),
    (
        "recall --file binary",
        ["recall", "--adr-dir", "adrs", "--file", "binary.md"],
        "binary file (NUL byte",
    ),
]


@pytest.mark.parametrize(("argv", "message"), [c[1:] for c in USAGE_CASES], ids=[c[0] for c in USAGE_CASES])
def test_unusable_arguments_exit_2_with_one_clear_line(
    argv: list[str], message: str, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli([*argv, *(["--store", store(work)] if argv[0] == "index" else [])], capsys)
    assert code == 2
    assert message in err
    assert "[Errno" not in err  # the OS error is worded, not dumped
    assert out == ""


def test_blind_spots_config_that_cannot_be_read_is_named(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")  # past the key check; nothing is called
    code, _out, err = run_cli(["blind-spots", "--file", "proposal.md", "--config", "nope.yml"], capsys)
    assert code == 2
    assert err.strip() == "adr-review blind-spots: --config: cannot read nope.yml: No such file or directory"


# ------------------------------------------------------------------------------------------------
# Stores that cannot be used


@pytest.mark.parametrize("command", ["index", "recall"])
def test_an_index_store_that_is_not_a_folder_fails_the_run_in_one_line(
    command: str, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "--adr-dir", "adrs", "--store", str(work / "a-file" / "sub")]
    code, out, err = run_cli(argv + (["--text", "database"] if command == "recall" else []), capsys)
    assert code == 1
    assert f"adr-review {command}: cannot open the index store {work / 'a-file' / 'sub' / 'chroma'}" in err
    assert len(err.strip().splitlines()) == 1 and out == ""


def test_a_corrupt_index_store_is_kept_aside_and_rebuilt(
    work: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    damaged = work / "damaged-store"
    (damaged / "chroma").mkdir(parents=True)
    (damaged / "chroma" / "chroma.sqlite3").write_bytes(b"\x13garbage, not SQLite" * 500)
    (damaged / "chroma" / "junk.bin").write_bytes(b"\x00\xff" * 100)
    argv = ["recall", "--adr-dir", "adrs", "--store", str(damaged), "--text", "orders database", "--json"]
    code, out, _err = run_cli(argv, capsys)
    assert code == 0
    assert [c["adr_id"] for c in json.loads(out)["candidates"]][:1] == ["ADR-0001"]
    (aside,) = damaged.glob("chroma.corrupt-*")
    assert (aside / "chroma.sqlite3").read_bytes().startswith(b"\x13garbage")  # kept, not deleted
    assert any("was corrupt" in r.getMessage() and aside.name in r.getMessage() for r in caplog.records)
    caplog.clear()
    code, out, _err = run_cli(argv, capsys)  # the rebuilt store is simply used
    assert code == 0 and json.loads(out)["candidates"]
    assert len(list(damaged.glob("chroma.corrupt-*"))) == 1
    assert not any("was corrupt" in r.getMessage() for r in caplog.records)


def _state_file_is_a_folder(w: Path) -> Path:
    (w / "store" / "checkpoints.sqlite3").mkdir(parents=True)
    return w / "store"


@pytest.mark.parametrize(
    ("where", "shown"),
    [
        pytest.param(lambda w: w / "a-file" / "checkpoints.sqlite3", "", id="under-a-file"),
        pytest.param(lambda w: w / "garbage.sqlite3", "", id="not-sqlite"),
        pytest.param(
            _state_file_is_a_folder, "checkpoints.sqlite3", id="a-store-folder-whose-file-is-a-folder"
        ),
    ],
)
def test_a_checkpoint_store_that_cannot_open_only_costs_the_checkpoints(
    where: Callable[[Path], Path], shown: str, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = where(work)
    path = given / shown if shown else given  # --store DIR keeps its checkpoints in DIR/checkpoints.sqlite3
    argv = ["review", "proposal.md", "--adr-dir", "adrs", "--index-dir", store(work), "--store", str(given)]
    code, out, err = run_cli(argv, capsys)
    assert code == 0
    assert f"adr-review review: warning: cannot open the store {path}" in err
    assert "this run's stages are not saved" in err
    assert "ADR-0001" in out  # the review itself still ran and cited the past ADR
    assert (work / "garbage.sqlite3").read_bytes().startswith(b"this is not")  # never overwritten


def test_an_unreadable_proposal_says_why_on_stderr_and_exits_1(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["review", "binary.md", "--adr-dir", "adrs", "--index-dir", store(work)], capsys)
    assert code == 1
    assert "adr-review review: binary.md: binary file (NUL byte at offset" in err
    assert "Could not review this ADR" in out  # the error comment is still printed


# ------------------------------------------------------------------------------------------------
# eval retrieval


def _corpus(root: Path, qrels: str) -> Path:
    root.mkdir(parents=True)
    for name, text in PAST.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "qrels.jsonl").write_text(qrels, encoding="utf-8")
    return root


GOOD_QREL = json.dumps(
    {
        "query": "q1",
        "query_text": "which relational database for orders",
        "relevant": ["0001-use-postgres.md"],
    }
)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", "qrels.jsonl:2: not a qrels line (a JSON object per line, not list)"),
        ('"just a string"', "qrels.jsonl:2: not a qrels line (a JSON object per line, not str)"),
        ("{not json", "qrels.jsonl:2: not a qrels line"),
        ('{"query": "q"}', "qrels.jsonl:2: not a qrels line ('query_text')"),
    ],
)
def test_a_bad_qrels_line_is_named_by_file_and_line(
    line: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _corpus(tmp_path / "c", GOOD_QREL + "\n" + line + "\n")
    code, out, err = run_cli(["eval", "retrieval", "--corpus", str(corpus)], capsys)
    assert code == 2
    assert message in err and out == ""


def test_one_bad_corpus_of_many_is_skipped_and_the_others_are_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _corpus(tmp_path / "all" / "a-broken", "[1, 2]\n")
    _corpus(tmp_path / "all" / "b-good", GOOD_QREL + "\n")
    code, out, err = run_cli(["eval", "retrieval", "--corpus", str(tmp_path / "all")], capsys)
    assert code == 1  # not everything was scored
    assert "a-broken/qrels.jsonl:1: not a qrels line" in err and "not scored: a-broken" in err
    assert "b-good [en]" in out and "a-broken" not in out


# ------------------------------------------------------------------------------------------------
# The command line's last line of defence


@pytest.mark.parametrize(
    ("raised", "code", "stderr"),
    [
        (RuntimeError("boom /secret"), 1, "adr-review index: internal error (RuntimeError) (ADR_REVIEW"),
        (KeyboardInterrupt(), 130, "adr-review index: interrupted"),
        (BrokenPipeError(), 1, ""),
    ],
)
def test_an_unexpected_failure_is_one_line_not_a_traceback(
    raised: BaseException,
    code: int,
    stderr: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from adr_review.entrypoints.commands import index

    def explode(_args: object) -> int:
        raise raised

    monkeypatch.setattr(index, "run", explode)
    got, _out, err = run_cli(["index", "--adr-dir", "adrs"], capsys)
    assert got == code
    assert err.strip() == stderr if not stderr else err.strip().startswith(stderr)
    assert len(err.strip().splitlines()) <= 1


@pytest.mark.real_process
def test_the_installed_command_prints_no_traceback(work: Path) -> None:
    """End to end through the console script: a store under a file is one line, exit 1."""
    proc = subprocess.run(
        [sys.executable, "-m", "adr_review", "index", "--adr-dir", "adrs", "--store", "a-file/x"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"adr-review index: cannot open the index store {Path('a-file/x/chroma')}: Not a directory (os error 20)"
    ]


# ------------------------------------------------------------------------------------------------
# The Action


def _env(tmp_path: Path, event_name: str, event_file: Path) -> dict[str, str]:
    return {
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_file),
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_WORKSPACE": str(tmp_path),
    }


@pytest.mark.parametrize(
    ("event_name", "content", "code", "message"),
    [
        ("pull_request", None, 1, "::error title=adr-review::cannot read the event file"),
        ("pull_request", b"not json", 1, "::error title=adr-review::cannot read the event file"),
        ("pull_request", b"\xff\xfe\x00", 1, "::error title=adr-review::cannot read the event file"),
        ("pull_request", b"[1, 2]", 1, "is not a JSON object"),
        ("pull_request", b"{}", 1, "::error title=adr-review::cannot read the pull_request event payload"),
        ("frobnicate", b"{}", 0, "adr-review: event frobnicate is not handled; nothing to do."),
    ],
)
def test_action_event_problems_are_one_annotation(
    event_name: str, content: bytes | None, code: int, message: str, tmp_path: Path
) -> None:
    event = tmp_path / "event.json"
    if content is not None:
        event.write_bytes(content)

    def no_github(*_args: object) -> object:
        raise AssertionError("no GitHub client is needed to reject an event")

    out = io.StringIO()
    assert run_action(_env(tmp_path, event_name, event), stdout=out, github_factory=no_github) == code  # type: ignore[arg-type]
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_action_with_a_corrupt_checkpoint_store_still_posts(h: Harness) -> None:  # noqa: F811
    cache = h.tmp / "workspace" / ".adr-review"
    cache.mkdir(parents=True)
    (cache / "checkpoints.sqlite3").write_bytes(b"restored by actions/cache, but damaged" * 50)
    open_pr(h)
    r = h.run("pull_request", "pull_request__opened.payload.json")
    assert r.code == 0, r.stdout
    assert "::warning::cannot open the store" in r.stdout and "not checkpointed" in r.stdout
    assert len(h.adr_comments()) == 1
