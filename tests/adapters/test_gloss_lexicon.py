"""The JMdict gloss lexicon adapter: what it keeps of jamdict's SQLite, its cache, its absence.
The database here is a three-entry fixture with jamdict's table layout, not JMdict."""

from __future__ import annotations

import sqlite3
import sys
import types
from pathlib import Path

import pytest

from adr_review.adapters import gloss_lexicon


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
    monkeypatch.setitem(sys.modules, "jamdict_data", fake)
    monkeypatch.setattr(gloss_lexicon, "jmdict_available", lambda: True)
    monkeypatch.setattr(gloss_lexicon, "_LOADED", {})


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
