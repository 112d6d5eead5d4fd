"""`python -m adr_review.entrypoints.build_lexicon FILE`: derive the dictionary scorer's compact JMdict
lexicon from the installed `jamdict-data` into FILE, once, where the package is installed (the Docker
image's `lexicon` build stage), with JMdict's licence statement beside it (JMdict-LICENCE.md: the
EDRDG licence asks software that uses the files to ship it). A machine that sets
ADR_REVIEW_GLOSS_LEXICON=FILE then needs only the file (21.7 MB) for cross-language recall, not the
311 MB package (app/adr_review/adapters/gloss_lexicon.py).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from adr_review.adapters import gloss_lexicon
from adr_review.adapters.gloss_lexicon import PREBUILT, SqliteLexicon, derive_lexicon

LICENCE = "JMdict-LICENCE.md"
ATTRIBUTION = """\
# JMdict: attribution and licence

`{name}` is derived from JMdict, the Japanese-Multilingual Dictionary File: for each kanji and kana
form of an entry, the first English glosses of the entry's first sense, taken from the jamdict-data
{version} package's database. adr-review uses it to gloss Japanese text for cross-language recall.

JMdict is the property of the Electronic Dictionary Research and Development Group (EDRDG), copyright
James William Breen and the Group, and is used in conformance with the Group's licence:
https://www.edrdg.org/edrdg/licence.html (the JMdict project: https://www.edrdg.org/wiki/index.php/JMdict-EDICT_Dictionary_Project).
Its licence statement as shipped with that data follows.

---

"""


def write_licence(lexicon: Path, version: str) -> Path:
    """JMdict's licence statement, as jamdict-data ships it, beside the derived file."""
    import jamdict_data

    shipped = (Path(jamdict_data.__file__).parent / "LICENSE.md").read_text(encoding="utf-8")
    path = lexicon.with_name(LICENCE)
    path.write_text(ATTRIBUTION.format(name=lexicon.name, version=version) + shipped, encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adr_review.entrypoints.build_lexicon",
        description=f"Derive the compact JMdict gloss lexicon from jamdict-data into FILE (for {PREBUILT}).",
    )
    parser.add_argument("file", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    if not gloss_lexicon.jmdict_available():
        print("jamdict-data is not installed: pip install 'adr-review[multilingual]'", file=sys.stderr)
        return 2
    try:
        forms = derive_lexicon(args.file)
        lexicon = SqliteLexicon(args.file)
        version = lexicon.version or "?"
        lexicon.close()
        licence = write_licence(args.file, version)
    except OSError as exc:
        print(f"{args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # e.g. a jamdict-data installed without its database
        print(f"jamdict-data's database cannot be read ({exc}): reinstall it as a wheel", file=sys.stderr)
        return 2
    size = args.file.stat().st_size / 1e6
    print(f"{args.file}: {forms} forms, {size:.1f} MB, from jamdict-data {version}; its licence: {licence}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
