"""`adr-review report` end to end on a SQLite store filled through the FeedbackLog API: the issue's
done-when numbers, JSON, the window flags, the default store, --png with and without matplotlib."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from adr_review.adapters.state_sqlite import SqliteStateStore
from adr_review.cli import main
from adr_review.core.feedback import Ledger, Revision, Shown

REPO, PR, PATH = "acme/shop", 7, "docs/adr/0008-kafka.md"
IDS = ("aaaa0001", "bbbb0002", "cccc0003", "dddd0004")


def fill(path: Path) -> None:
    """A review showing four findings, an ADR revision pushed after them, two boxes ticked by a
    collaborator, one finding dismissed with a reason, and a second repository's ADR without findings."""
    with SqliteStateStore(path) as store:
        shown = tuple(
            Shown(fid, "high", "privacy" if i < 2 else "premortem/technical", f"finding {i}")
            for i, fid in enumerate(IDS)
        )
        ledger = Ledger().add(Revision("1" * 16, shown, 0.30, ("a" * 12,)))
        store.record_ledger(REPO, PR, PATH, ledger)
        store.record_ledger(REPO, PR, PATH, ledger.add(Revision("2" * 16, (), 0.10, ("b" * 12,))))
        assert store.record_ticks(REPO, PR, PATH, {IDS[0]: True, IDS[1]: True}, "alice") == list(IDS[:2])
        assert store.record_dismissal(REPO, PR, IDS[3], "bob", "we accept this risk, see ADR-0003") == PATH
        store.record_ledger("acme/other", 1, "adr/1.md", Ledger().add(Revision("3" * 16, (), 0.0)))
        store.close()


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    path = tmp_path / "state.sqlite3"
    fill(path)
    return path


def test_the_done_when_report(store_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["report", "--store", str(store_file), "--repo", REPO, "--min-findings", "4"])
    out = capsys.readouterr().out
    assert code == 0
    assert "## 📊 adr-review feedback report: acme/shop" in out
    assert (
        "**Sunset rule (≥ 20 % of findings adopted, ≥ 10 % of ADRs revised): keep — both rates are at or above their lines**"
        in out
    )
    assert "| **50 %** (2 of 4) | 20 % | ✅ |" in out  # 2/4 adopted
    assert "| **100 %** (1 of 1) | 10 % | ✅ |" in out  # the revision
    assert "| Dismissed (`/adr-review dismiss`) | 1 (25 %) |" in out
    assert "| Model cost | $0.40 · $0.40 per reviewed ADR |" in out
    assert "we accept this risk, see ADR-0003" in out


def test_json_for_every_repository(store_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--store", str(store_file), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["repos"] == ["acme/other", REPO]
    assert (data["adrs_reviewed"], data["adrs_with_findings"], data["adrs_revised"]) == (2, 1, 1)
    assert (data["findings_shown"], data["findings_adopted"], data["findings_dismissed"]) == (4, 2, 1)
    assert data["acceptance_rate"] == 0.5 and data["revision_rate"] == 1.0
    assert data["sunset"]["verdict"] == "not_enough_data"  # 4 shown, the default minimum is 10
    assert data["dismissed_perspectives"] == [
        {"perspective": "premortem/technical", "shown": 2, "dismissed": 1, "share": 0.5}
    ]
    assert data["latest_dismissals"][0]["by"] == "bob"


def test_a_window_before_the_reviews_is_empty(store_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "report",
        "--store",
        str(store_file),
        "--format",
        "json",
        "--since",
        "2020-01-01",
        "--until",
        "2020-01-31",
    ]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["adrs_reviewed"], data["findings_shown"], data["acceptance_rate"]) == (0, 0, None)
    assert (data["since_utc"], data["until_utc"]) == (
        "2020-01-01T00:00:00+00:00",
        "2020-02-01T00:00:00+00:00",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "yesterday"], "is not an ISO date"),
        (["--since", "2026-02-01", "--until", "2026-01-01"], "--until must be after --since"),
        (["--until", "2026-01-01"], "--until needs --since"),
        (["--repo", "shop"], "is not owner/name"),
        (["--days", "0"], "days must be positive"),
    ],
)
def test_bad_arguments_say_what_is_wrong(
    store_file: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--store", str(store_file), *args]) == 2
    assert message in capsys.readouterr().err


def test_the_default_store_is_the_apps_then_the_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("ADR_REVIEW_DATABASE_URL", "ADR_REVIEW_DB_PATH", "ADR_REVIEW_STORE_DIR"):
        monkeypatch.delenv(var, raising=False)
    assert main(["report"]) == 2
    err = capsys.readouterr().err
    assert "no state store at .adr-review/app.sqlite3, .adr-review/checkpoints.sqlite3" in err
    assert not (tmp_path / ".adr-review").exists()  # nothing created
    (tmp_path / ".adr-review").mkdir()
    fill(tmp_path / ".adr-review" / "checkpoints.sqlite3")  # the Action's cache folder
    assert main(["report", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings_shown"] == 4


def test_png_is_written(store_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "report.png"
    assert main(["report", "--store", str(store_file), "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## 📊 adr-review feedback report" in capsys.readouterr().out


def test_png_without_matplotlib_says_so_and_still_prints_the_report(
    store_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    png = tmp_path / "report.png"
    assert main(["report", "--store", str(store_file), "--png", str(png)]) == 1
    captured = capsys.readouterr()
    assert "## 📊 adr-review feedback report" in captured.out
    assert "matplotlib is not installed: pip install 'adr-review[report]'" in captured.err
    assert not png.exists()


@pytest.mark.parametrize("name", ["app.sqlite3", "checkpoints.sqlite3"])
def test_store_may_name_the_store_folder_as_for_the_other_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    folder = tmp_path / ".adr-review"
    folder.mkdir()
    fill(folder / name)
    assert main(["report", "--store", str(folder), "--repo", REPO, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings_shown"] == 4
