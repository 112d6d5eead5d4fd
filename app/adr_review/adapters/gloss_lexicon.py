"""The JA->EN gloss lexicon of the dictionary cross-language scorer (app/adr_review/core/gloss.py).

Built from JMdict (the `jamdict-data` package: 311 MB installed, JMdict under CC BY-SA 4.0, the
EDRDG licence) at first use into the model cache, as a compact SQLite file of every kanji and kana
form with the first glosses of its entry's first sense (about 395k forms); later runs read only
that file. Glossing one query or a few changed ADRs looks words up one by one (no load time); a
sync that glosses many ADRs reads the whole file into memory first (`preload`, under a second).
Nothing of JMdict is in this repository.

A prebuilt file (`python -m adr_review.entrypoints.build_lexicon OUT`, what the Docker image does in a
build stage) is used instead of the package when ADR_REVIEW_GLOSS_LEXICON names it: a machine or
image then needs only the file, not the package. Without either, `load_lexicon` returns None and the
channel stays off.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

log = logging.getLogger("adr_review.index")

FORMAT = "adr-review-gloss/2"
GLOSSES = 2  # kept per form: the scorer uses the first one or two
PREBUILT = "ADR_REVIEW_GLOSS_LEXICON"  # the path of a prebuilt lexicon file, used before jamdict-data


def cache_dir() -> Path:
    """ADR_REVIEW_MODEL_CACHE (as for embedding models), else ~/.cache/adr-review/models."""
    return Path(os.environ.get("ADR_REVIEW_MODEL_CACHE") or Path.home() / ".cache" / "adr-review" / "models")


def jmdict_available() -> bool:
    return importlib.util.find_spec("jamdict_data") is not None


def lexicon_available() -> bool:
    """Whether a lexicon can be had: the prebuilt file, or jamdict-data to derive one from."""
    return prebuilt_lexicon() is not None or jmdict_available()


def prebuilt_path() -> Path | None:
    raw = os.environ.get(PREBUILT, "").strip()
    return Path(raw) if raw else None


def prebuilt_lexicon() -> SqliteLexicon | None:
    """The file ADR_REVIEW_GLOSS_LEXICON names, opened once per process; None when it is not set or
    cannot be used (then `lexicon_problem` says why)."""
    path = prebuilt_path()
    if path is None:
        return None
    if path not in _LOADED:
        try:
            lexicon = SqliteLexicon(path)
        except (OSError, ValueError, sqlite3.Error):
            return None
        if lexicon.version is None:  # a cache file of an older release: which JMdict is unknown
            lexicon.close()
            return None
        _LOADED[path] = lexicon
    return _LOADED[path]


def lexicon_problem() -> str | None:
    """Why the file ADR_REVIEW_GLOSS_LEXICON names cannot be used, or None (not set, or usable)."""
    path = prebuilt_path()
    if path is None or prebuilt_lexicon() is not None:
        return None
    what = (
        "no such file" if not path.is_file() else f"not a gloss lexicon ({FORMAT}, with its JMdict version)"
    )
    return f"{PREBUILT}={path}: {what}; build one with python -m adr_review.entrypoints.build_lexicon FILE"


def build_lexicon(db_path: Path) -> dict[str, list[str]]:
    """form -> the first GLOSSES English glosses of its entry's first sense, from jamdict's SQLite."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        first: dict[int, int] = {}
        for sid, idseq in db.execute("SELECT ID, idseq FROM Sense ORDER BY ID"):
            first.setdefault(int(idseq), int(sid))
        wanted = set(first.values())
        glosses: dict[int, list[str]] = {}
        for sid, text in db.execute(
            "SELECT sid, text FROM SenseGloss WHERE lang = 'eng' OR lang IS NULL ORDER BY rowid"
        ):
            if sid in wanted and len(got := glosses.setdefault(int(sid), [])) < GLOSSES:
                got.append(str(text))
        out: dict[str, list[str]] = {}
        for table in ("Kanji", "Kana"):
            for idseq, text in db.execute(f"SELECT idseq, text FROM {table} ORDER BY ID"):  # noqa: S608
                g = glosses.get(first.get(int(idseq), -1))
                if g and text not in out:
                    out[str(text)] = g
        return out
    finally:
        db.close()


def lexicon_version() -> str | None:
    """The JMdict version of the lexicon in use (part of what the stored views depend on): the prebuilt
    file's, else the installed jamdict-data's; None without either."""
    prebuilt = prebuilt_lexicon()
    if prebuilt is not None:
        return prebuilt.version
    if not jmdict_available():
        return None
    return _jamdict_version()


def _jamdict_version() -> str:
    import jamdict_data

    return str(getattr(jamdict_data, "__version__", "0"))


class SqliteLexicon(Mapping[str, Sequence[str]]):
    """form -> glosses over the cached SQLite file, each answer kept in memory once asked for."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        self._known: dict[str, Sequence[str] | None] = {}
        self._complete = False
        try:
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("format") != FORMAT:
                raise ValueError("not a gloss lexicon of this format")
        except (ValueError, sqlite3.Error):
            self._db.close()
            raise
        self.version: str | None = meta.get("jmdict")  # the JMdict data it was derived from

    def close(self) -> None:
        self._db.close()

    def __getitem__(self, form: str) -> Sequence[str]:
        got = self._known.get(form, ())
        if got == ():
            if self._complete:
                raise KeyError(form)
            with self._lock:
                row = self._db.execute("SELECT glosses FROM forms WHERE form = ?", (form,)).fetchone()
            got = row[0].split(_SEP) if row else None
            self._known[form] = got
            if len(self._known) > _MOST_KNOWN:
                self.preload()  # a long-lived process: the whole lexicon, then misses are not kept
        if got is None:
            raise KeyError(form)
        return got

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            forms = [r[0] for r in self._db.execute("SELECT form FROM forms")]
        return iter(forms)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM forms").fetchone()[0])

    def preload(self) -> None:
        """Every form in memory: for glossing many ADRs, cheaper than a lookup per substring."""
        if self._complete:
            return
        with self._lock:
            rows = self._db.execute("SELECT form, glosses FROM forms").fetchall()
        self._known = {form: glosses.split(_SEP) for form, glosses in rows}
        self._complete = True


_SEP = "\x1f"
_MOST_KNOWN = 400_000  # answers kept (misses too) before the lexicon is read whole: memory stays bounded
_LOADED: dict[Path, SqliteLexicon] = {}
_WARNED: set[str] = set()  # a prebuilt file's problem is logged once per process


def load_lexicon(cache: Path | None = None) -> SqliteLexicon | None:
    """The prebuilt lexicon ADR_REVIEW_GLOSS_LEXICON names, else the one derived from `jamdict-data`
    into the cache at first use; None without either."""
    prebuilt = prebuilt_lexicon()
    if prebuilt is not None:
        return prebuilt
    if (problem := lexicon_problem()) is not None and problem not in _WARNED:
        _WARNED.add(problem)
        log.warning("%s; using jamdict-data if it is installed", problem)
    version = lexicon_version()
    if version is None:
        return None
    path = (cache or cache_dir()) / f"jmdict-gloss-{version}.sqlite"
    if path in _LOADED:
        return _LOADED[path]
    with contextlib.suppress(OSError, ValueError, sqlite3.Error):
        _LOADED[path] = SqliteLexicon(path)
        return _LOADED[path]
    try:
        derive_lexicon(path)
        _LOADED[path] = SqliteLexicon(path)
        return _LOADED[path]
    except (OSError, sqlite3.Error) as exc:
        log.warning("gloss lexicon not cached (%s): it is built again next time", exc)
        return None


def derive_lexicon(path: Path) -> int:
    """Write the compact lexicon derived from the installed `jamdict-data` to `path` (atomically, with
    the JMdict version in it); returns its number of forms. ImportError without the package."""
    import jamdict_data

    lexicon = build_lexicon(Path(jamdict_data.JAMDICT_DB_PATH))
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(tmp, lexicon, _jamdict_version())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return len(lexicon)


def _write(path: Path, lexicon: Mapping[str, Sequence[str]], version: str) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
    db = sqlite3.connect(path)
    try:
        db.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
            "CREATE TABLE forms (form TEXT PRIMARY KEY, glosses TEXT NOT NULL) WITHOUT ROWID;"
        )
        db.executemany("INSERT INTO meta VALUES (?, ?)", (("format", FORMAT), ("jmdict", version)))
        db.executemany("INSERT INTO forms VALUES (?, ?)", ((k, _SEP.join(v)) for k, v in lexicon.items()))
        db.commit()
    finally:
        db.close()
