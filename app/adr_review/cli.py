"""`adr-review` command line. Subcommands live in app/adr_review/entrypoints/commands/<name>.py, imported lazily
so `adr-review --help` stays fast (chromadb and anthropic are never imported here)."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

# name -> (module under adr_review.entrypoints.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "review": ("review", "review one ADR locally and print the PR comment it would post"),
    "recall": ("recall", "recall the past ADRs related to a proposal"),
    "guard": ("guard", "the accepted ADRs a code change (a unified diff) touches, offline; silent when none"),
    "blind-spots": ("blindspots", "run recall and the blind-spot critics on one ADR (needs an API key)"),
    "index": ("index", "build or refresh the ADR index of a folder"),
    "list": ("list", "list the ADRs of a folder as the tool reads them, and what it skipped and why"),
    "eval": (
        "eval",
        "score retrieval on a corpus (eval retrieval) or prompts on golden cases (eval prompts)",
    ),
    "report": (
        "report",
        "what reviewers did with the findings, against the sunset rule (keep the blind spots while at "
        "least 20 percent of findings are adopted and 10 percent of ADRs revised): Markdown, JSON, PNG",
    ),
    "action": ("action", "run as a GitHub Action (reads GITHUB_* and INPUT_* from the environment)"),
    "serve": ("serve", "run the GitHub App webhook server"),
    "health": ("health", "check that this host's App worker is alive (a container healthcheck)"),
}


def version() -> str:
    """The installed distribution's version (pyproject.toml's, as built), or a plain "unknown" when the
    code runs from a checkout that was never installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("adr-review")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="adr-review", description="Review Architecture Decision Records.")
    parser.add_argument("-V", "--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def one_blas_thread() -> None:
    """numpy's OpenBLAS starts a thread per core, and they spin between calls. Our products are small
    (a query against a few thousand vectors), so on a busy 2-core runner the spinning threads take CPU
    from the work: a 644-ADR recall process beside a CPU-bound job went 0.68 -> 0.62 s (wall, median of
    10) with one thread. Takes effect only before numpy loads; a user's own setting is kept."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv: Sequence[str] | None = None) -> int:
    one_blas_thread()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["--version"], ["-V"]):
        print(f"adr-review {version()}")
        return 0
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        parser = build_parser()
        if argv and argv[0] not in ("-h", "--help"):
            parser.error(f"unknown command {argv[0]!r}")
        parser.print_help()
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    module = importlib.import_module(f"adr_review.entrypoints.commands.{COMMANDS[name][0]}")
    sub = argparse.ArgumentParser(prog=f"adr-review {name}", description=COMMANDS[name][1])
    module.configure(sub)
    args = sub.parse_args(rest)
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        print(f"adr-review {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `adr-review ... | head`: the reader left; say nothing more
        _silence_stdout()
        return 1
    except Exception as exc:  # the last line of defence: one clear line, the traceback on demand
        from adr_review.core.results import internal_error

        if os.environ.get("ADR_REVIEW_LOG_LEVEL", "").upper() == "DEBUG":
            traceback.print_exc()
        print(
            f"adr-review {name}: {internal_error(exc)} (ADR_REVIEW_LOG_LEVEL=DEBUG shows the traceback)",
            file=sys.stderr,
        )
        return 1


def entry() -> NoReturn:
    """The console script and `python -m adr_review`: `main`, then an exit that skips the collector.

    Everything a command made lives until the process ends, yet CPython's exit still runs its
    collector over all of it (most of a 644-ADR recall process's teardown). gc.freeze takes it out of
    the collector's sight; memory goes back to the OS as ever, and files, logs and atexit handlers
    close as they did (none waits for the collector). Not in main(): tests call it in one process,
    where garbage frozen at every call would never be freed."""
    code = main()
    gc.freeze()
    sys.exit(code)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # a captured stdout (tests) has no file descriptor


if __name__ == "__main__":
    sys.exit(main())
