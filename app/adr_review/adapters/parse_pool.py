"""Parse many ADR files on the machine's cores: a cold index of a large folder spends most of its time
in the parser (pure Python, one core), so the files are parsed in forked worker processes when there
are enough of them and more than one core to use.

`parse_files(items)` gives, for each (relative path, bytes), what `parse_adr` gives: the Adr, or the
AdrParseError for that file, in the order given, whichever way they were parsed. The pool is used
only with the "fork" start method (the workers inherit the inputs and the imported parser: nothing
is re-imported or sent to them but the index of their share), from a process with one thread, for
at least MIN_PARALLEL files and with two usable cores, at most MAX_WORKERS workers; anything else,
or a pool that cannot start or loses a worker (killed, out of memory), parses in this process, so
the outcome never depends on it.

A caller may hand in `SideWork`: what it would do next with each parsed ADR anyway and that needs
nothing but the ADRs (a cold index's chunk vectors and term counts, index_prep.py). Each worker runs
it on the ADRs of its share and this process `keep`s each result as it arrives (the others are still
being parsed), so that work is spread over the cores too; in this process, or when it fails in a
worker, it is not run: the caller does it. A result kept before a worker is lost stays kept: the
files are then parsed again here, to the same ADRs.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from adr_review.core.adr import Adr, AdrParseError, parse_adr

log = logging.getLogger("adr_review.index")

MIN_PARALLEL = 64  # fewer files parse faster than a pool starts
MAX_WORKERS = 4
BATCH_BYTES = 64 << 20  # input held at once (FileParser)
_SHARES_PER_WORKER = 4  # files differ in size: several shares per worker even out the load

Outcome = Adr | AdrParseError


class SideWork(Protocol):
    """Work on a share's parsed ADRs done in the worker that parsed them (see the module doc)."""

    def run(self, adrs: Sequence[Adr]) -> object: ...  # in a worker: its result must pickle
    def keep(self, result: object) -> None: ...  # in this process, once per share; must not raise


_inputs: Sequence[tuple[str, bytes]] = ()  # what a forked worker parses (set before the fork)
_side: SideWork | None = None  # what it does next with its ADRs (set before the fork)


class FileParser:
    """Files handed in one by one (`add`), parsed in batches of at most BATCH_BYTES of input (memory
    stays bounded on a folder of large files); `outcomes()` gives them all, in the order added."""

    def __init__(self, max_bytes: int, side: SideWork | None = None) -> None:
        self.max_bytes = max_bytes
        self.side = side
        self._done: list[Outcome] = []
        self._pending: list[tuple[str, bytes]] = []
        self._size = 0

    def add(self, path: str, data: bytes) -> None:
        self._pending.append((path, data))
        self._size += len(data)
        if self._size > BATCH_BYTES:
            self._flush()

    def outcomes(self, meanwhile: Callable[[], object] | None = None) -> list[Outcome]:
        """All outcomes; `meanwhile` as in parse_files, for the last batch (no fork follows it)."""
        self._flush(meanwhile)
        return self._done

    def _flush(self, meanwhile: Callable[[], object] | None = None) -> None:
        self._done += parse_files(
            self._pending, max_bytes=self.max_bytes, meanwhile=meanwhile, side=self.side
        )
        self._pending, self._size = [], 0


def parse_files(
    items: Sequence[tuple[str, bytes]],
    *,
    max_bytes: int,
    meanwhile: Callable[[], object] | None = None,
    side: SideWork | None = None,
) -> list[Outcome]:
    """`parse_adr` of each (path, data), in order: an Adr or that file's AdrParseError. When they are
    parsed in workers, this process calls `meanwhile` while it waits for them (work the caller does
    next anyway, such as opening the index's store); its errors are ignored, so it must be work
    that is done again, and fails where it belongs, when it is needed. `side`: see the module doc."""
    workers = _workers(len(items))
    if workers > 1:
        from concurrent.futures.process import BrokenProcessPool  # not imported by a small parse

        try:
            return _parse_forked(items, workers, max_bytes, meanwhile, side)
        except (BrokenProcessPool, OSError) as exc:  # a worker died, or no process could be made
            log.warning("parsing in %d processes failed (%s): parsing in this one", workers, exc)
    return _parse_range(items, 0, len(items), max_bytes)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _workers(n_files: int) -> int:
    if n_files < MIN_PARALLEL:
        return 1
    import multiprocessing

    # A fork copies only the calling thread: with others running (the App's web and worker threads)
    # a lock one of them holds would stay held in the child. Only a one-thread process forks.
    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return 1
    return min(usable_cores(), MAX_WORKERS)


def _parse_forked(
    items: Sequence[tuple[str, bytes]],
    workers: int,
    max_bytes: int,
    meanwhile: Callable[[], object] | None,
    side: SideWork | None,
) -> list[Outcome]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _inputs, _side
    n = len(items)
    shares = workers * _SHARES_PER_WORKER
    bounds = [(n * i // shares, n * (i + 1) // shares) for i in range(shares)]
    _inputs, _side = items, side
    log.debug("parsing %d files in %d processes", n, workers)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_parse_share, lo, hi, max_bytes) for lo, hi in bounds]
            if meanwhile is not None:  # the workers are forked by now: nothing it starts is inherited
                try:
                    meanwhile()
                except Exception as exc:  # noqa: BLE001 - done again where it is needed
                    log.debug("while parsing: %s", exc)
            out: list[Outcome] = []
            for future in futures:
                results, extra = future.result()
                out.extend(_outcome(r) for r in results)
                if side is not None and extra is not None:  # while the other shares are parsed
                    side.keep(extra)
            return out
    finally:
        _inputs, _side = (), None


def _parse_share(lo: int, hi: int, max_bytes: int) -> tuple[list[Adr | tuple[str, str]], object]:
    """In a worker: its share of the inherited inputs (an error as (path, reason): it pickles), and
    what the side work made of its ADRs (None without it, or when it failed: the caller does it)."""
    outcomes = _parse_range(_inputs, lo, hi, max_bytes)
    extra: object = None
    if _side is not None:
        try:
            extra = _side.run([r for r in outcomes if isinstance(r, Adr)])
        except Exception as exc:  # noqa: BLE001 - the caller does the work itself
            log.debug("side work of a parse share failed: %s", exc)
    return [(r.path, r.reason) if isinstance(r, AdrParseError) else r for r in outcomes], extra


def _outcome(result: Adr | tuple[str, str]) -> Outcome:
    return AdrParseError(*result) if isinstance(result, tuple) else result


def _parse_range(items: Sequence[tuple[str, bytes]], lo: int, hi: int, max_bytes: int) -> list[Outcome]:
    out: list[Outcome] = []
    for path, data in items[lo:hi]:
        try:
            out.append(parse_adr(path, data, max_bytes=max_bytes))
        except AdrParseError as exc:
            out.append(exc)
    return out
