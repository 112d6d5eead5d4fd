"""ADR collections nobody tuned on: how the parser reads them, against labels read by hand.

    .venv/bin/python benchmarks/adr_collections.py [--mirrors DIR] [--details]

The collections and the ground truth are in benchmarks/adr_collections.json (status of every ADR, the
typed relations its text states, how its id is expected; see "about" there). A repository source is
read at the labelled commit from a git directory `<mirrors>/<owner>+<name>/repo` or
`<mirrors>/<owner>+<name>/.git` (a clone; DIR defaults to $ADR_REVIEW_MIRRORS, else
benchmarks/.collections); without one, the script prints the clone command. Fixture sources are read from the repository.

Per collection: Markdown files in the folder, ADRs (after the folder rules: no README, licence,
index page, template or attachment), parsed, per-file errors, status unknown (parsed), wrong status
(parsed differs from the label), wrong id (after the folder's de-duplication), and the typed relations
(supersedes / superseded_by) found, missed and spurious. Exit 0 always: a report, not a gate.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from adr_review.adapters.adr_files import dedupe_ids  # noqa: E402
from adr_review.core.adr import Adr, AdrParseError, canonical_id_key, parse_adr  # noqa: E402
from adr_review.core.adr.names import id_from_filename  # noqa: E402
from adr_review.core.adr_paths import adr_stem, select_adr_files  # noqa: E402

LABELS = Path(__file__).with_name("adr_collections.json")


@dataclass
class Tally:
    files: int = 0
    adrs: int = 0
    parsed: int = 0
    errors: int = 0
    unknown: int = 0
    wrong_status: int = 0
    wrong_id: int = 0
    relations: int = 0
    found: int = 0
    spurious: int = 0
    details: list[str] = field(default_factory=list)


def _git_dir(mirrors: Path, repo: str) -> Path | None:
    base = mirrors / repo.replace("/", "+")
    for candidate in (base / "repo", base / ".git", base):
        if (candidate / "HEAD").is_file():
            return candidate
    return None


def _files(col: dict[str, Any], folder: str, mirrors: Path) -> Iterator[tuple[str, bytes]] | None:
    """(path relative to the ADR folder, bytes) of every Markdown file in it."""
    if col.get("source", "").startswith("fixtures:"):
        root = REPO / col["source"].split(":", 1)[1] / folder
        for p in sorted(root.rglob("*.md")):
            yield p.relative_to(root).as_posix(), p.read_bytes()
        return None
    git = _git_dir(mirrors, col["repo"])
    if git is None:
        return None
    listing = subprocess.run(
        [
            "git",
            "--git-dir",
            str(git),
            "ls-tree",
            "-r",
            "-z",
            "--name-only",
            col["commit"],
            "--",
            folder or ".",
        ],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for path in sorted(p for p in listing.split("\0") if p.endswith((".md", ".markdown"))):
        rel = posixpath.relpath(path, folder) if folder else path
        if not col.get("recursive", bool(folder)) and "/" in rel:
            continue
        show = f"{col['commit']}:{path}"
        yield (
            rel,
            subprocess.run(
                ["git", "--git-dir", str(git), "show", show], capture_output=True, check=True
            ).stdout,
        )
    return None


def _expected_id(rule: str, rel: str, taken: set[str]) -> str:
    """The id a reader finds: the file number (or the stem, by the collection's rule); a later file that
    repeats a number is known by its file name (`taken` holds the ids given so far, in path order)."""
    expected = adr_stem(rel) if rule == "stem" else (id_from_filename(rel)[0] or adr_stem(rel))
    if canonical_id_key(expected) in taken:
        expected = adr_stem(rel)
    taken.add(canonical_id_key(expected))
    return expected


def _target_name(target: str, by_id: dict[str, str]) -> str:
    """A link target as a file name: ids are looked up among the folder's ADRs."""
    if target.endswith((".md", ".markdown")):
        return posixpath.basename(target)
    return posixpath.basename(by_id.get(canonical_id_key(target), target))


def measure(col: dict[str, Any], mirrors: Path) -> Tally | None:
    t = Tally()
    for folder in col.get("folders", [col.get("folder", "")]):
        files = list(_files(col, folder, mirrors) or [])
        if not files and "repo" in col and _git_dir(mirrors, col["repo"]) is None:
            return None
        prefix = f"{folder}/" if "folders" in col else ""
        data = dict(files)
        t.files += len(files)
        chosen = select_adr_files(sorted(data))
        t.adrs += len(chosen)
        adrs: list[Adr] = []
        for rel in chosen:
            try:
                adrs.append(parse_adr(rel, data[rel]))
            except AdrParseError as exc:
                t.errors += 1
                t.details.append(f"error   {prefix}{rel}: {exc.reason}")
        adrs = dedupe_ids(adrs)
        t.parsed += len(adrs)
        by_id = {canonical_id_key(a.adr_id): a.path for a in adrs}
        taken: set[str] = set()
        for adr in adrs:
            key = prefix + adr.path
            expected_status = col["status"].get(key, col["default_status"])
            if adr.status == "unknown":
                t.unknown += 1
            if adr.status != expected_status:
                t.wrong_status += 1
                t.details.append(
                    f"status  {key}: {adr.status} (raw {adr.raw_status[:40]!r}), expected {expected_status}"
                )
            expected_id = _expected_id(col["ids"], adr.path, taken)
            if canonical_id_key(adr.adr_id) != canonical_id_key(expected_id):
                t.wrong_id += 1
                t.details.append(f"id      {key}: {adr.adr_id}, expected {expected_id}")
            expected = {(k, posixpath.basename(v)) for k, v in col["relations"].get(key, [])}
            got = {(lk.kind, _target_name(lk.target, by_id)) for lk in adr.links if lk.kind != "related"}
            t.relations += len(expected)
            t.found += len(expected & got)
            t.spurious += len(got - expected)
            for kind, target in sorted(expected - got):
                t.details.append(f"missed  {key}: {kind} {target}")
            for kind, target in sorted(got - expected):
                t.details.append(f"extra   {key}: {kind} {target}")
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = os.environ.get("ADR_REVIEW_MIRRORS") or str(REPO / "benchmarks" / ".collections")
    ap.add_argument("--mirrors", type=Path, default=Path(default))
    ap.add_argument("--details", action="store_true", help="list every mismatch")
    args = ap.parse_args(argv)
    cols = json.loads(LABELS.read_text(encoding="utf-8"))["collections"]
    head = "| collection | files | ADRs | parsed | errors | status unknown | wrong status | wrong id | relations found / missed (spurious) |"
    print(head)
    print("|:--|--:|--:|--:|--:|--:|--:|--:|--:|")
    totals = Tally()
    missing = []
    for col in cols:
        t = measure(col, args.mirrors)
        if t is None:
            missing.append(col)
            continue
        for name in (
            "files",
            "adrs",
            "parsed",
            "errors",
            "unknown",
            "wrong_status",
            "wrong_id",
            "relations",
            "found",
            "spurious",
        ):
            setattr(totals, name, getattr(totals, name) + getattr(t, name))
        print(
            f"| {col['name']} | {t.files} | {t.adrs} | {t.parsed} | {t.errors} | {t.unknown} | {t.wrong_status} | "
            f"{t.wrong_id} | {t.found} / {t.relations - t.found} ({t.spurious}) |"
        )
        if args.details:
            for line in t.details:
                print(f"|   {line} |||||||||")
    t = totals
    print(
        f"| **all** | {t.files} | {t.adrs} | {t.parsed} | {t.errors} | {t.unknown} | {t.wrong_status} | {t.wrong_id} | "
        f"{t.found} / {t.relations - t.found} ({t.spurious}) |"
    )
    for col in missing:
        print(
            f"\nnot measured, no copy of {col['repo']}: git clone https://github.com/{col['repo']} "
            f"{args.mirrors}/{col['repo'].replace('/', '+')} && git -C ... checkout {col['commit']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
