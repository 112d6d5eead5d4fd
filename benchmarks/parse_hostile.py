"""Hostile ADR files against the parser: each must parse, or be refused with a per-file error, in
under a second on this machine.

    .venv/bin/python benchmarks/parse_hostile.py [--repeat 3] [--memory]

The set: the issue's (YAML alias bomb, 1 MB single line, 1 MB of `<!--`, `_a` runs, deep nesting,
10,000 headings) and every other shape that made an earlier parser or markdown-it-py slow (link and
image openers, tables, lists, nested quotes, padded `Status:` lines, long headings, reference
definitions...). Each file is just under the 1 MB limit unless its shape says otherwise. Prints one
line per file (best time of --repeat runs, the outcome, with --memory the peak traced allocation) and
PASS/FAIL against the 1 s bar; exit 1 if any file fails it. Nothing here is used by the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adr_review.core.adr import AdrParseError, parse_adr, reader_blocks, text_reader_blocks  # noqa: E402
from adr_review.core.adr.markdown import read_markdown  # noqa: E402

LIMIT = 1_000_000
BAR_S = 1.0


def fill(head: bytes, unit: bytes, tail: bytes = b"") -> bytes:
    """head + as many units as fit under the size limit + tail."""
    n = (LIMIT - 1_000 - len(head) - len(tail)) // len(unit)
    return head + unit * n + tail


def lines(head: bytes, unit: bytes, count: int = 19_500) -> bytes:
    """head + `count` lines of unit (just under the parser's line cap, so the other budgets are met)."""
    return head + unit * (count // max(1, unit.count(b"\n")))


def _alias_bomb() -> bytes:
    lines = [b"---", b'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev = f"*a{i - 1}".encode()
        lines.append(f"a{i}: &a{i} [".encode() + b",".join([prev] * 9) + b"]")
    lines += [b"status: *a8", b"---", b"# Title", b"", b"## Decision", b"", b"Do it."]
    return b"\n".join(lines) + b"\n"


CASES: dict[str, Callable[[], bytes]] = {
    # The set.
    "YAML alias bomb (front matter)": _alias_bomb,
    "1 MB single line": lambda: fill(b"", b"x"),
    "1 MB single line of leading spaces": lambda: fill(b"", b" ", b"x"),
    "1 MB of <!--": lambda: fill(b"", b"<!--"),
    "1 MB of <!-- after text": lambda: fill(b"# T\n\nSee ", b"<!-- "),
    "_a runs in a paragraph": lambda: fill(b"# T\n\n## Decision\n\n", b"_a "),
    "_a runs in the title": lambda: fill(b"# ", b"_a ", b"\n\n## Decision\n\nx\n"),
    "deep nesting: > quotes": lambda: fill(b"", b">"),
    "deep nesting: nested quotes, 19,500 lines": lambda: lines(b"", b">>>>>>>>>>>>>>>>>>>>>>>> x\n"),
    "deep nesting: nested lists": lambda: b"".join(b"  " * (i % 40) + b"- x\n" for i in range(20_000)),
    "deep nesting: [[[ links": lambda: fill(b"", b"["),
    "deep nesting: front matter [[[": lambda: b"---\nx: " + b"[" * 500_000 + b"\n---\n# T\n",
    "10,000 headings": lambda: b"## Context\n\nx\n\n" * 10_000,
    "10,000 heading lines": lambda: b"".join(b"# heading %d\n" % i for i in range(10_000)),
    "10,000 status headings": lambda: b"## Status\n\n\n" * 10_000,
    # Shapes that made the old regexes quadratic.
    "Status: line padded with spaces": lambda: fill(b"# T\n\n* Status:", b" ", b"x\n"),
    "table row padded with spaces": lambda: fill(b"# T\n\n| Status | a", b" ", b"x |\n"),
    "heading padded with spaces": lambda: fill(b"# a", b" ", b"(b)\n"),
    "heading of glosses": lambda: fill(b"# a ", b"(b)"),
    "{ runs in the status": lambda: fill(b"# T\n\n* Status: ", b"{a|"),
    "relation phrases": lambda: fill(b"# T\n\n* Status: ", b"superseded by ADR-1 "),
    # Shapes that are slow in markdown-it-py (linear, but many microseconds a character).
    "![ runs": lambda: fill(b"# T\n\n", b"!["),
    "[a]( runs": lambda: fill(b"# T\n\n", b"[a]("),
    "*a runs": lambda: fill(b"# T\n\n", b"*a "),
    "**a runs": lambda: fill(b"# T\n\n", b"**a "),
    "`a runs": lambda: fill(b"# T\n\n", b"`a "),
    "<a runs": lambda: fill(b"# T\n\n", b"<a "),
    "&amp; runs": lambda: fill(b"# T\n\n", b"&amp;"),
    "autolink openers": lambda: fill(b"# T\n\n", b"<http://a"),
    "reference definitions, 19,500 lines": lambda: lines(b"", b"[a]: /u\n"),
    "table rows, 19,500 lines": lambda: lines(b"|a|b|\n|-|-|\n", b"|x|y|\n"),
    "wide table": lambda: (
        b"|" + b"a|" * 50_000 + b"\n|" + b"-|" * 50_000 + b"\n" + (b"|" + b"x|" * 50_000 + b"\n") * 7
    ),
    "list items, 19,500 lines": lambda: lines(b"", b"- a\n"),
    "nested list items, 19,500 lines": lambda: b"".join(b"  " * (i % 12) + b"- a\n" for i in range(19_500)),
    "setext headings, 19,500 lines": lambda: lines(b"", b"a\n-\n"),
    "fences, 19,500 lines": lambda: lines(b"", b"```\n"),
    "one paragraph of 19,500 lines": lambda: lines(b"# T\n\n## Decision\n\n", b"a\n"),
    "one paragraph of 19,500 long lines": lambda: lines(b"# T\n\n## Decision\n\n", b"a " * 24 + b"\n"),
    "1 MB of list items": lambda: fill(b"", b"- a\n"),
    "1 MB of blank lines": lambda: fill(b"# T\n", b"\n", b"x\n"),
    "60,000 headings": lambda: b"## Context\n\nx\n\n" * 60_000,
}


def run(name: str, data: bytes, repeat: int, memory: bool) -> tuple[float, float, str, int]:
    best = cpu = float("inf")
    outcome = ""
    for _ in range(repeat):
        read_markdown.cache_clear()
        text_reader_blocks.cache_clear()
        started, started_cpu = time.perf_counter(), time.process_time()
        try:
            adr = parse_adr("0001-hostile.md", data)
            blocks = reader_blocks(adr)
            outcome = (
                f"parsed: {len(adr.sections)} sections, {len(adr.links)} links, {len(blocks)} reader blocks"
            )
            if adr.notes:
                outcome += f" (note: {adr.notes[0][:60]})"
        except AdrParseError as exc:
            outcome = f"refused: {exc.reason[:90]}"
        best = min(best, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - started_cpu)
    peak = 0
    if memory:
        tracemalloc.start()
        with contextlib.suppress(AdrParseError):
            parse_adr("0001-hostile.md", data)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return best, cpu, outcome, peak


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per file; the best is reported")
    ap.add_argument("--memory", action="store_true", help="also trace peak allocation (slower)")
    args = ap.parse_args(argv)
    failed = 0
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)")
    print(f"{'file':44s} {'bytes':>9s} {'wall s':>7s} {'cpu s':>6s}  {'':4s} outcome")
    for name, make in CASES.items():
        data = make()
        seconds, cpu, outcome, peak = run(name, data, args.repeat, args.memory)
        ok = seconds < BAR_S
        failed += not ok
        mem = f" peak {peak / 1e6:.0f} MB" if args.memory else ""
        print(
            f"{name:44s} {len(data):9d} {seconds:7.3f} {cpu:6.3f}  {'PASS' if ok else 'FAIL'} {outcome}{mem}",
            flush=True,
        )
    print(f"\n{len(CASES) - failed}/{len(CASES)} files under {BAR_S:.0f} s (wall, best of {args.repeat})")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
