"""A large folder is parsed in forked workers (parse_pool.py): the outcome, ADRs and per-file errors in
file order, is the one parsing in this process gives, whether the pool is used, not used (a small
folder, one core) or loses a worker."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from adr_review.adapters import parse_pool
from adr_review.adapters.adr_files import load_adr_folder, load_adr_folder_cached
from adr_review.core.adr import Adr, AdrParseError, parse_adr


def _folder(root: Path, n: int) -> Path:
    root.mkdir()
    for i in range(n):
        if i % 17 == 5:
            (root / f"{i:04d}-empty.md").write_text("  \n")
        elif i % 17 == 9:
            (root / f"{i:04d}-binary.md").write_bytes(b"# ADR\x00\x01")
        else:
            name = f"{i - 1:04d}-again-{i}.md" if i % 23 == 1 else f"{i:04d}-decision-{i}.md"  # an id twice
            (root / name).write_text(
                f"# {i}. Decision {i}\n\nStatus: accepted\n\n## Context\n\nSee ADR-{i + 1} and "
                f"[the next one]({i + 1:04d}-decision-{i + 1}.md), *not* `ADR-999`.\n"
            )
    return root


def _pid_marking(monkeypatch: pytest.MonkeyPatch, die_in_worker: str | None = None) -> None:
    """parse_adr that records the parsing process in `extra` (and dies in a worker on one file)."""

    def parse(path: str, data: bytes, *, max_bytes: int = 1_000_000) -> Adr:
        if path == die_in_worker and os.getpid() != main:
            os._exit(1)
        adr = parse_adr(path, data, max_bytes=max_bytes)
        return dataclasses.replace(adr, extra={**adr.extra, "pid": str(os.getpid())})

    main = os.getpid()
    monkeypatch.setattr(parse_pool, "parse_adr", parse)


Outcome = tuple[list[Adr], list[tuple[str, str]]]


def _outcome(adrs: list[Adr], errors: list[AdrParseError]) -> Outcome:
    unmarked = [dataclasses.replace(a, extra={k: v for k, v in a.extra.items() if k != "pid"}) for a in adrs]
    return unmarked, [(e.path, e.reason) for e in errors]


@pytest.fixture
def large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_cores: None) -> tuple[Path, Outcome]:
    """A folder large enough for the pool, and its outcome parsed in this process (one usable core)."""
    root = _folder(tmp_path / "adrs", 2 * parse_pool.MIN_PARALLEL)
    with monkeypatch.context() as m:
        m.setattr(parse_pool, "usable_cores", lambda: 1)
        return root, _outcome(*load_adr_folder(root))


def test_a_large_folder_is_parsed_in_workers_with_the_same_outcome(
    large: tuple[Path, Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, expected = large
    _pid_marking(monkeypatch)
    adrs, errors = load_adr_folder(root)
    assert str(os.getpid()) not in {a.extra["pid"] for a in adrs}
    assert _outcome(adrs, errors) == expected
    assert len(expected[1]) == sum(1 for i in range(2 * parse_pool.MIN_PARALLEL) if i % 17 in (5, 9))
    assert any("also the id of" in note for a in expected[0] for note in a.notes)


def test_the_cached_loader_gives_the_same_outcome_cold_and_warm(
    large: tuple[Path, Outcome], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, expected = large
    _pid_marking(monkeypatch)
    for _run in ("cold", "warm"):
        assert _outcome(*load_adr_folder_cached(root, tmp_path / "store" / "parsed.json")) == expected


def test_a_small_folder_is_parsed_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, two_cores: None
) -> None:
    root = _folder(tmp_path / "adrs", parse_pool.MIN_PARALLEL - 1)
    _pid_marking(monkeypatch)
    adrs, _errors = load_adr_folder(root)
    assert {a.extra["pid"] for a in adrs} == {str(os.getpid())}


def test_a_process_with_other_threads_parses_in_itself(
    large: tuple[Path, Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork copies one thread: a lock another thread holds (the App's threads) would stay held."""
    root, expected = large
    _pid_marking(monkeypatch)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        adrs, errors = load_adr_folder(root)
    finally:
        release.set()
        other.join()
    assert {a.extra["pid"] for a in adrs} == {str(os.getpid())}
    assert _outcome(adrs, errors) == expected


def test_a_worker_that_dies_costs_time_not_the_outcome(
    large: tuple[Path, Outcome], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root, expected = large
    _pid_marking(monkeypatch, die_in_worker="0100-decision-100.md")
    assert _outcome(*load_adr_folder(root)) == expected
    assert "parsing in this one" in caplog.text


def _items(root: Path) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(root.iterdir())]


def test_this_process_does_the_callers_next_step_while_workers_parse(
    large: tuple[Path, Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _expected = large
    _pid_marking(monkeypatch)
    called: list[int] = []
    out = parse_pool.parse_files(_items(root), max_bytes=10_000, meanwhile=lambda: called.append(os.getpid()))
    assert called == [os.getpid()]
    assert str(os.getpid()) not in {r.extra["pid"] for r in out if isinstance(r, Adr)}


def test_a_failing_step_meanwhile_changes_nothing(
    large: tuple[Path, Outcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _expected = large
    items = _items(root)
    plain = parse_pool.parse_files(items, max_bytes=10_000)

    def fail() -> None:
        raise OSError("the store cannot be opened")  # the sync opens it again and reports it

    _pid_marking(monkeypatch)
    out = parse_pool.parse_files(items, max_bytes=10_000, meanwhile=fail)
    assert str(os.getpid()) not in {r.extra["pid"] for r in out if isinstance(r, Adr)}  # no fallback
    assert [_outcome([r], []) if isinstance(r, Adr) else r.reason for r in out] == [
        _outcome([r], []) if isinstance(r, Adr) else r.reason for r in plain
    ]


def test_a_parse_in_this_process_leaves_the_next_step_to_the_caller(tmp_path: Path) -> None:
    root = _folder(tmp_path / "adrs", parse_pool.MIN_PARALLEL - 1)
    called: list[int] = []
    parse_pool.parse_files(_items(root), max_bytes=10_000, meanwhile=lambda: called.append(1))
    assert called == []


class _Side:
    """Side work that records which process ran it on which ADRs (parse_pool.SideWork)."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.kept: list[tuple[int, list[str]]] = []

    def run(self, adrs: Sequence[Adr]) -> object:
        if self.fail:
            raise RuntimeError("side work broke")
        return os.getpid(), [a.path for a in adrs]

    def keep(self, result: object) -> None:
        self.kept.append(result)  # type: ignore[arg-type]


def test_side_work_runs_in_the_workers_on_what_they_parsed(large: tuple[Path, Outcome]) -> None:
    root, _expected = large
    side = _Side()
    out = parse_pool.parse_files(_items(root), max_bytes=10_000, side=side)
    assert side.kept and os.getpid() not in {pid for pid, _paths in side.kept}
    assert [p for _pid, paths in side.kept for p in paths] == [r.path for r in out if isinstance(r, Adr)]


def test_side_work_that_fails_in_a_worker_is_left_to_the_caller(large: tuple[Path, Outcome]) -> None:
    root, _expected = large
    items = _items(root)
    side = _Side(fail=True)
    out = parse_pool.parse_files(items, max_bytes=10_000, side=side)
    assert side.kept == []
    assert [getattr(r, "path", None) for r in out] == [
        getattr(r, "path", None) for r in parse_pool.parse_files(items, max_bytes=10_000)
    ]


def test_side_work_is_not_run_by_a_parse_in_this_process(tmp_path: Path, two_cores: None) -> None:
    side = _Side()
    parse_pool.parse_files(
        _items(_folder(tmp_path / "adrs", parse_pool.MIN_PARALLEL - 1)), max_bytes=10_000, side=side
    )
    assert side.kept == []
