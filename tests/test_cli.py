"""The command line stays light: --help must not import the heavy SDKs (it must stay under 0.5 s)."""

import os
import subprocess
import sys

import pytest

from adr_review.cli import COMMANDS, main


def test_help_lists_every_command(capsys) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert name in out


def test_unknown_command_is_an_error() -> None:
    try:
        main(["frobnicate"])
    except SystemExit as exc:
        assert exc.code == 2
    else:  # pragma: no cover - argparse always exits
        raise AssertionError("expected SystemExit")


@pytest.mark.real_process
def test_help_does_not_import_heavy_sdks() -> None:
    code = (
        "import sys; from adr_review.cli import main; main(['--help']);"
        "heavy = [m for m in ('chromadb', 'anthropic', 'github', 'githubkit', 'onnxruntime') if m in sys.modules];"
        "print('HEAVY=' + ','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "HEAVY="


def test_every_command_module_exists() -> None:
    import importlib

    for module, _help in COMMANDS.values():
        mod = importlib.import_module(f"adr_review.entrypoints.commands.{module}")
        assert callable(mod.configure) and callable(mod.run)


@pytest.mark.real_process
def test_a_commands_log_lines_carry_their_fields_not_only_the_event_name() -> None:
    """A warning such as llm_call_failed must say what failed and why in the CLI's and the Action's log."""
    code = (
        "import logging; from adr_review.entrypoints.commands.common import setup_logging; setup_logging();"
        "logging.getLogger('adr_review.adapters.llm.adapter').warning("
        "'llm_call_failed', extra={'kind': 'auth', 'error': 'HTTP 401: authentication_error'})"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stderr.strip() == (
        'WARNING adr_review.adapters.llm.adapter: llm_call_failed {"kind": "auth", "error": "HTTP 401: authentication_error"}'
    )


def test_help_cites_no_internal_design_ids(capsys) -> None:
    """A user has never seen the design documents: help says the rule, not `ADR-0071` or "seed 002"."""
    import re

    texts = [help_text for _module, help_text in COMMANDS.values()]
    assert main(["--help"]) == 0
    texts.append(capsys.readouterr().out)
    for name in COMMANDS:
        with pytest.raises(SystemExit):
            main([name, "--help"])
        texts.append(capsys.readouterr().out)
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    texts += [
        p.read_text(encoding="utf-8") for p in sorted((root / "templates").rglob("*.*"))
    ]  # comment, report
    texts.append((root / "app" / "adr_review" / "adapters" / "report_chart.py").read_text(encoding="utf-8"))
    pattern = r"ADR-0(?:071|116)|seed(?:'s)? ?0\d\d|the seed(?:'|'')s|シードの"
    found = [m.group(0) for t in texts for m in re.finditer(pattern, t)]
    assert found == []


BLAS_PROBE = (
    "import contextlib, io, os, sys\n"
    "from adr_review.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    main(['--version'])\n"
    "import numpy\n"
    "print(os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')))\n"
)


@pytest.mark.real_process
@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("2", "2")])
def test_the_cli_runs_numpy_with_one_blas_thread_unless_told_otherwise(
    given: str | None, expected: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    out = subprocess.run(
        [sys.executable, "-c", BLAS_PROBE], capture_output=True, text=True, env=env, check=True, timeout=120
    ).stdout.split()
    assert out[0] == expected
    if given is None:
        assert out[1] == "1"  # the main thread only: no BLAS workers started


@pytest.mark.real_process
@pytest.mark.parametrize("how", ["-m", "script"])
def test_the_console_script_exits_without_the_final_collections(how: str) -> None:
    """entry() freezes what the command made, so the interpreter's exit does not collect it (the
    teardown of a 644-ADR recall spent most of its time there); the output and the exit status are main's."""
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('FROZEN=%s' % (gc.get_freeze_count() > 0)))\n"
        "sys.argv = ['adr-review', '--version']\n"
    )
    run = (
        "import runpy; runpy.run_module('adr_review', run_name='__main__')"
        if how == "-m"
        else ("from adr_review.cli import entry; entry()")
    )
    done = subprocess.run([sys.executable, "-c", probe + run], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("adr-review ") and done.stdout.strip().endswith("FROZEN=True")


def test_main_itself_freezes_nothing() -> None:
    """Tests call main() in one process: garbage frozen at every call would never be freed."""
    import gc

    before = gc.get_freeze_count()
    assert main(["--version"]) == 0
    assert gc.get_freeze_count() == before
