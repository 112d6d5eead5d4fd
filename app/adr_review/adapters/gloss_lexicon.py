"""The JA->EN gloss lexicon of the dictionary cross-language scorer (app/adr_review/core/gloss.py).

Built from JMdict (the `jamdict-data` package: 311 MB installed, JMdict under CC BY-SA 4.0, the
EDRDG licence) at first use into the model cache, as a compact SQLite file of every kanji and kana
form with the first glosses of its entry's first sense (about 395k forms); later runs read only
that file. Glossing one query or a few changed ADRs looks words up one by one (no load time); a
sync that glosses many ADRs reads the whole file into memory first (`preload`, under a second).
Nothing of JMdict is in this repository. Without the package, `load_lexicon` returns None and the
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


def cache_dir() -> Path:
    """ADR_REVIEW_MODEL_CACHE (as for embedding models), else ~/.cache/adr-review/models."""
    return Path(os.environ.get("ADR_REVIEW_MODEL_CACHE") or Path.home() / ".cache" / "adr-review" / "models")


def jmdict_available() -> bool:
    return importlib.util.find_spec("jamdict_data") is not None


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
    """The installed JMdict data's version (part of what the stored views depend on), or None."""
    if not jmdict_available():
        return None
    import jamdict_data

    return str(getattr(jamdict_data, "__version__", "0"))


class SqliteLexicon(Mapping[str, Sequence[str]]):
    """form -> glosses over the cached SQLite file, each answer kept in memory once asked for."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        self._known: dict[str, Sequence[str] | None] = {}
        self._complete = False
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        if row is None or row[0] != FORMAT:
            raise ValueError("not a gloss lexicon of this format")

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


def load_lexicon(cache: Path | None = None) -> SqliteLexicon | None:
    """The compact lexicon, built into the cache at first use; None without `jamdict-data`."""
    version = lexicon_version()
    if version is None:
        return None
    import jamdict_data

    path = (cache or cache_dir()) / f"jmdict-gloss-{version}.sqlite"
    if path in _LOADED:
        return _LOADED[path]
    with contextlib.suppress(OSError, ValueError, sqlite3.Error):
        _LOADED[path] = SqliteLexicon(path)
        return _LOADED[path]
    lexicon = build_lexicon(Path(jamdict_data.JAMDICT_DB_PATH))
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(tmp, lexicon)
        os.replace(tmp, path)
        _LOADED[path] = SqliteLexicon(path)
        return _LOADED[path]
    except (OSError, sqlite3.Error) as exc:
        log.warning("gloss lexicon not cached (%s): it is built again next time", exc)
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None


def _write(path: Path, lexicon: Mapping[str, Sequence[str]]) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
    db = sqlite3.connect(path)
    try:
        db.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
            "CREATE TABLE forms (form TEXT PRIMARY KEY, glosses TEXT NOT NULL) WITHOUT ROWID;"
        )
        db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
        db.executemany("INSERT INTO forms VALUES (?, ?)", ((k, _SEP.join(v)) for k, v in lexicon.items()))
        db.commit()
    finally:
        db.close()
