"""The JA->EN gloss lexicon of the dictionary cross-language scorer (app/core/gloss.py).

Built from JMdict (the `jamdict-data` package: 311 MB installed, JMdict under CC BY-SA 4.0, the
EDRDG licence) at first use into the model cache, as a compact file of every kanji and kana form
with the first glosses of its entry's first sense (about 395k forms); later runs read only that
file (once per process: it is kept in memory). Nothing of JMdict is in this repository. Without the
package, `load_lexicon` returns None and the channel stays off.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import json
import logging
import os
import sqlite3
from pathlib import Path

log = logging.getLogger("adr_review.index")

FORMAT = "adr-review-gloss/1"
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


_LOADED: dict[Path, dict[str, list[str]]] = {}


def load_lexicon(cache: Path | None = None) -> dict[str, list[str]] | None:
    """The compact lexicon, built into the cache at first use; None without `jamdict-data`."""
    version = lexicon_version()
    if version is None:
        return None
    import jamdict_data

    path = (cache or cache_dir()) / f"jmdict-gloss-{version}.json.gz"
    if path in _LOADED:
        return _LOADED[path]
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            raw = json.load(f)
        forms = raw["forms"]
        if raw["format"] == FORMAT and isinstance(forms, dict):
            _LOADED[path] = forms  # our own file, written below: checked by its format line
            return _LOADED[path]
    lexicon = build_lexicon(Path(jamdict_data.JAMDICT_DB_PATH))
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(tmp, "wt", encoding="utf-8") as f:
            json.dump({"format": FORMAT, "forms": lexicon}, f, ensure_ascii=False)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("gloss lexicon not cached (%s): it is built again next time", exc)
    _LOADED[path] = lexicon
    return lexicon
