"""The JMdict gloss lexicon adapter: what it keeps of jamdict's SQLite, its cache, its absence, and a
prebuilt file named by ADR_REVIEW_GLOSS_LEXICON (what the Docker image ships instead of jamdict-data).
The database here is a three-entry fixture with jamdict's table layout, not JMdict."""

from __future__ import annotations

import sqlite3
import sys
import types
from pathlib import Path

import pytest

from adr_review.adapters import gloss_lexicon, xl_channel
from adr_review.entrypoints import build_lexicon


@pytest.fixture(autouse=True)
def _no_prebuilt_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no prebuilt file named and nothing loaded (the image sets the variable)."""
    monkeypatch.delenv(gloss_lexicon.PREBUILT, raising=False)
    monkeypatch.setattr(gloss_lexicon, "_LOADED", {})
    monkeypatch.setattr(gloss_lexicon, "_WARNED", set())


def _fixture_db(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE Sense (ID INTEGER PRIMARY KEY, idseq INTEGER);
        CREATE TABLE SenseGloss (sid INTEGER, lang TEXT, gend TEXT, text TEXT);
        CREATE TABLE Kanji (ID INTEGER PRIMARY KEY, idseq INTEGER, text TEXT);
        CREATE TABLE Kana (ID INTEGER PRIMARY KEY, idseq INTEGER, text TEXT, nokanji BOOLEAN);
        INSERT INTO Sense VALUES (1, 100), (2, 100), (3, 200);
        INSERT INTO SenseGloss VALUES (1, 'eng', NULL, 'address (e.g. of house)'), (1, 'eng', NULL, 'residence'),
            (1, 'eng', NULL, 'domicile'), (2, 'eng', NULL, 'second sense'), (3, 'ger', NULL, 'Zeitraum'),
            (3, 'eng', NULL, 'period');
        INSERT INTO Kanji VALUES (1, 100, '住所'), (2, 200, '期間');
        INSERT INTO Kana VALUES (1, 100, 'じゅうしょ', 0), (2, 200, 'きかん', 0);
        """
    )
    db.commit()
    db.close()
    return path


def test_build_keeps_the_first_english_glosses_of_the_first_sense(tmp_path: Path) -> None:
    lex = gloss_lexicon.build_lexicon(_fixture_db(tmp_path / "j.db"))
    assert lex == {
        "住所": ["address (e.g. of house)", "residence"],
        "じゅうしょ": ["address (e.g. of house)", "residence"],
        "期間": ["period"],
        "きかん": ["period"],
    }


def _fake_jamdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed `jamdict_data` whose database is the fixture, and no lexicon loaded yet."""
    fake = types.ModuleType("jamdict_data")
    fake.JAMDICT_DB_PATH = str(_fixture_db(tmp_path / "j.db"))  # type: ignore[attr-defined]
    fake.__version__ = "9.9"  # type: ignore[attr-defined]
    package = tmp_path / "jamdict_data"
    package.mkdir()
    (package / "LICENSE.md").write_text(
        "ELECTRONIC DICTIONARY RESEARCH AND DEVELOPMENT GROUP\n", encoding="utf-8"
    )
    fake.__file__ = str(package / "__init__.py")
    monkeypatch.setitem(sys.modules, "jamdict_data", fake)
    monkeypatch.setattr(gloss_lexicon, "jmdict_available", lambda: True)


def test_load_builds_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_jamdict(tmp_path, monkeypatch)
    first = gloss_lexicon.load_lexicon(tmp_path / "cache")
    assert first is not None and list(first["期間"]) == ["period"] and "未知" not in first
    assert (tmp_path / "cache" / "jmdict-gloss-9.9.sqlite").is_file()
    assert gloss_lexicon.load_lexicon(tmp_path / "cache") is first  # once per process
    gloss_lexicon._LOADED.clear()
    (tmp_path / "j.db").unlink()  # a new process reads only the cached file
    again = gloss_lexicon.load_lexicon(tmp_path / "cache")
    assert again is not None and dict(again) == {k: list(v) for k, v in first.items()} and len(again) == 4
    again.preload()  # every form in memory: the same answers, unknown forms still unknown
    assert list(again["住所"]) == ["address (e.g. of house)", "residence"] and "未知" not in again


def test_a_damaged_cache_file_is_built_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_jamdict(tmp_path, monkeypatch)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "jmdict-gloss-9.9.sqlite").write_bytes(b"not a database")
    lex = gloss_lexicon.load_lexicon(tmp_path / "cache")
    assert lex is not None and list(lex["期間"]) == ["period"]


def test_without_jamdict_data_there_is_no_lexicon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gloss_lexicon, "jmdict_available", lambda: False)
    assert gloss_lexicon.load_lexicon(tmp_path) is None
    assert not any(tmp_path.iterdir())


def test_a_long_lived_process_keeps_a_bounded_number_of_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_jamdict(tmp_path, monkeypatch)
    monkeypatch.setattr(gloss_lexicon, "_MOST_KNOWN", 2)
    lex = gloss_lexicon.load_lexicon(tmp_path / "cache")
    assert lex is not None
    for form in ("未知", "不明", "謎"):  # misses are kept until the bound, then the whole lexicon is read
        assert form not in lex
    assert lex._complete and len(lex._known) == 4  # the four forms, no misses
    assert list(lex["期間"]) == ["period"] and "謎" not in lex


# --- a prebuilt lexicon (ADR_REVIEW_GLOSS_LEXICON) -------------------------------------------------


def _prebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lexicon: dict[str, list[str]], version: str
) -> Path:
    """A prebuilt lexicon file holding `lexicon`, named by the setting."""
    path = tmp_path / "prebuilt" / "jmdict-gloss.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    gloss_lexicon._write(path, lexicon, version)
    monkeypatch.setenv(gloss_lexicon.PREBUILT, str(path))
    return path


def test_a_prebuilt_lexicon_is_used_without_jamdict_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gloss_lexicon, "jmdict_available", lambda: False)
    _prebuilt(tmp_path, monkeypatch, gloss_lexicon.build_lexicon(_fixture_db(tmp_path / "j.db")), "9.9")
    lex = gloss_lexicon.load_lexicon(tmp_path / "cache")
    assert lex is not None and list(lex["期間"]) == ["period"] and "未知" not in lex and len(lex) == 4
    assert gloss_lexicon.load_lexicon(tmp_path / "cache") is lex  # opened once per process
    assert gloss_lexicon.lexicon_version() == "9.9"  # the JMdict data it was derived from
    assert xl_channel.multilingual_available("dictionary") and gloss_lexicon.lexicon_problem() is None
    assert not (tmp_path / "cache").exists()  # read in place: nothing derived, nothing copied


def test_the_prebuilt_lexicon_wins_over_jamdict_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_jamdict(tmp_path, monkeypatch)  # jamdict-data 9.9 installed too
    _prebuilt(tmp_path, monkeypatch, {"期間": ["term"]}, "8.0")
    lex = gloss_lexicon.load_lexicon(tmp_path / "cache")
    assert lex is not None and dict(lex) == {"期間": ["term"]}
    assert gloss_lexicon.lexicon_version() == "8.0" and not (tmp_path / "cache").exists()


def _old_cache_file(path: Path) -> None:
    """A lexicon written before files carried their JMdict version: which data it holds is unknown."""
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
        "CREATE TABLE forms (form TEXT PRIMARY KEY, glosses TEXT NOT NULL);"
        f"INSERT INTO meta VALUES ('format', '{gloss_lexicon.FORMAT}'); INSERT INTO forms VALUES ('期間', 'period');"
    )
    db.commit()
    db.close()


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (None, "no such file"),
        (lambda p: p.write_bytes(b"not a database"), "not a gloss lexicon"),
        (_old_cache_file, "not a gloss lexicon"),
    ],
)
def test_an_unusable_prebuilt_file_is_named_and_jamdict_data_is_used_if_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: object, says: str
) -> None:
    path = tmp_path / "given.sqlite"
    if callable(make):
        make(path)
    monkeypatch.setenv(gloss_lexicon.PREBUILT, str(path))
    monkeypatch.setattr(gloss_lexicon, "jmdict_available", lambda: False)
    problem = gloss_lexicon.lexicon_problem()
    assert problem is not None and f"ADR_REVIEW_GLOSS_LEXICON={path}: {says}" in problem
    assert gloss_lexicon.load_lexicon(tmp_path / "cache") is None and gloss_lexicon.lexicon_version() is None
    assert not xl_channel.multilingual_available("dictionary")
    wanted, note = xl_channel.xl_wanted("auto", {"en", "ja"})
    assert not wanted and note and "adr-review[multilingual]" in note and problem in note
    _fake_jamdict(tmp_path, monkeypatch)  # with the package, the channel derives its own, as before
    lex = gloss_lexicon.load_lexicon(tmp_path / "cache")
    assert lex is not None and list(lex["期間"]) == ["period"] and gloss_lexicon.lexicon_version() == "9.9"


def test_build_lexicon_writes_the_file_the_setting_reads_and_jmdicts_licence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_jamdict(tmp_path, monkeypatch)
    out = tmp_path / "image" / "jmdict-gloss.sqlite"
    assert build_lexicon.main([str(out)]) == 0
    assert "4 forms" in capsys.readouterr().out
    licence = (out.parent / "JMdict-LICENCE.md").read_text(encoding="utf-8")
    assert (
        "Electronic Dictionary Research and Development Group" in licence and "jamdict-data\n9.9" in licence
    )
    assert licence.endswith("ELECTRONIC DICTIONARY RESEARCH AND DEVELOPMENT GROUP\n")  # as shipped
    monkeypatch.setenv(gloss_lexicon.PREBUILT, str(out))
    monkeypatch.setattr(gloss_lexicon, "jmdict_available", lambda: False)  # the image: no package
    lex = gloss_lexicon.load_lexicon(tmp_path / "cache")
    assert lex is not None and list(lex["住所"]) == ["address (e.g. of house)", "residence"]
    assert gloss_lexicon.lexicon_version() == "9.9"


def test_build_lexicon_without_jamdict_data_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gloss_lexicon, "jmdict_available", lambda: False)
    assert build_lexicon.main([str(tmp_path / "x.sqlite")]) == 2
    assert "adr-review[multilingual]" in capsys.readouterr().err and not any(tmp_path.iterdir())
