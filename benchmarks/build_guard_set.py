"""Build the guard's dev set from real history: commit ids and expected ADR paths, nothing else.

    .venv/bin/python benchmarks/build_guard_set.py --repo cometbft/cometbft=/path/to/cometbft.git \
        --repo kumahq/kuma=/path/to/kuma.git ... [--negatives 2] [--out benchmarks/guard_cases.json]

Each --repo is a local clone or bare mirror (`git --git-dir` must work on it). For every non-merge
commit whose message names an ADR (app/adr_review/evals/guard_history.py: "ADR-038", "ADR 12", "MADR 055", a
path into the ADR folder) and that changes code outside the ADR folder, a positive: the commit, its
parent, the ADR folder at the parent and the folder-relative paths of the ADRs it names that exist
there. For each positive, `--negatives` code commits of the same repository whose message names no
ADR and that touch no ADR file, picked deterministically (ties by a hash of both ids):

- `--match size` (default): the nearest in changed lines (log scale, outside the ADR folders and the
  ignored files) among the commits within 3 months of the positive (widened up to 12 until enough are
  free); each case records its `lines` and a negative the positive it was drawn `for`. Positives are
  much larger changes than a random commit, so without this the size of a diff alone tells them apart.
- `--match month`: any code commits of the same month (the first set, kept measurable).

A commit whose own diff reads a blob the mirror left out (its largest files) is neither: the eval
could not rebuild it.
`adr-review eval guard --cases FILE --repo NAME=GITDIR ...` rebuilds each case from the same clones.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import posixpath
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adr_review.core.guard import ignored  # noqa: E402
from adr_review.evals.guard_history import (  # noqa: E402
    ADR_WORD,
    Commit,
    adr_files_at,
    adr_number,
    commits,
    folder_at,
    git,
    referenced_names,
    referenced_numbers,
)

# Where each repository keeps its ADRs (the first that exists at a commit's parent is used).
FOLDERS: dict[str, list[str]] = {
    "cometbft/cometbft": ["docs/references/architecture", "docs/architecture"],
    "kumahq/kuma": ["docs/madr/decisions"],
    "cardano-scaling/hydra": ["docs/adr"],
    "ministryofjustice/cloud-platform": ["architecture-decision-record"],
    "cosmos/cosmos-sdk": ["docs/architecture"],
    "celestiaorg/celestia-app": ["docs/architecture"],
    "informalsystems/hermes": ["docs/architecture"],
    "sapientpants/sonarqube-mcp-server": ["docs/architecture/decisions", "doc/architecture/decisions"],
    "iog-creator/Gemantria": ["docs/ADRs"],
}
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc")
WINDOW = 3  # months either side of a positive that its size-matched negatives are drawn from
MAX_WINDOW = 12


def is_code(path: str, folders: list[str]) -> bool:
    if any(path.startswith(f + "/") for f in folders):
        return False
    return not path.lower().endswith(DOC_SUFFIXES) and not ignored(path)


def _tie(a: str, b: str) -> str:
    return hashlib.sha256(f"{a}{b}".encode()).hexdigest()


def changed_lines(git_dir: Path, folders: list[str]) -> dict[str, int]:
    """Lines added plus removed per non-merge commit, outside the ADR folders and the guard's ignored
    files (what the guard reads; binary and absent files count 0)."""
    absent = _absent_paths(git_dir)
    out = git(
        git_dir,
        "log",
        "--no-merges",
        "--no-renames",
        "--numstat",
        "--format=%x1e%H",
        "--",
        ".",
        *(f":(exclude,literal){p}" for p in sorted(absent)),
    )
    sizes: dict[str, int] = {}
    for record in out.decode("utf-8", "replace").split("\x1e")[1:]:
        sha, _, rest = record.partition("\n")
        total = 0
        for row in rest.splitlines():
            added, _, tail = row.partition("\t")
            removed, _, path = tail.partition("\t")
            if not path or any(path.startswith(f + "/") for f in folders) or ignored(path):
                continue
            total += int(added) if added.isdigit() else 0
            total += int(removed) if removed.isdigit() else 0
        sizes[sha.strip()] = total
    return sizes


def _missing_blobs(git_dir: Path) -> set[str]:
    """Blobs a mirror left out (its largest files)."""
    listing = git(git_dir, "rev-list", "--all", "--objects", "--missing=print").decode("utf-8", "replace")
    return {ln[1:].strip() for ln in listing.splitlines() if ln.startswith("?")}


def _raw_rows(git_dir: Path, missing: set[str]) -> list[tuple[str, str]]:
    """(commit, path) of every change in the history that reads one of the `missing` blobs."""
    raw = git(git_dir, "log", "--all", "--no-renames", "--raw", "--no-abbrev", "--format=%x1e%H")
    rows: list[tuple[str, str]] = []
    for record in raw.decode("utf-8", "replace").split("\x1e")[1:]:
        sha, _, rest = record.partition("\n")
        for row in rest.splitlines():
            meta, _, path = row.partition("\t")
            fields = meta.split()
            if len(fields) >= 4 and (fields[2] in missing or fields[3] in missing):
                rows.append((sha.strip(), path))
    return rows


def _absent_paths(git_dir: Path) -> set[str]:
    """Paths whose blobs a mirror left out (its largest files): `--numstat` cannot read them, so they
    count 0 (they are data files the guard does not read either)."""
    missing = _missing_blobs(git_dir)
    return {path for _sha, path in _raw_rows(git_dir, missing)} if missing else set()


def unreadable(git_dir: Path) -> set[str]:
    """Commits whose own diff reads a blob the mirror left out: `git diff` fails on them, so they
    can be neither a positive nor a negative."""
    missing = _missing_blobs(git_dir)
    return {sha for sha, _path in _raw_rows(git_dir, missing)} if missing else set()


def nearest_in_size(
    sha: str,
    size: int,
    date: str,
    pool: Sequence[Commit],
    sizes: Mapping[str, int],
    taken: set[str],
    n: int,
) -> list[Commit]:
    """The `n` commits of `pool` nearest to `size` changed lines (on a log scale), drawn from the
    months within WINDOW of `date` (widened a month at a time, up to MAX_WINDOW, until `n` are free);
    ties by a hash of both ids. What makes size alone useless for telling positives from negatives."""
    month = _month_index(date)
    for window in range(WINDOW, MAX_WINDOW + 1):
        near = [c for c in pool if c.sha not in taken and abs(_month_index(c.date) - month) <= window]
        if len(near) >= n or window == MAX_WINDOW:
            break
    key = math.log1p(size)
    near.sort(key=lambda c: (abs(math.log1p(sizes.get(c.sha, 0)) - key), _tie(sha, c.sha)))
    return near[:n]


def _month_index(date: str) -> int:
    return int(date[:4]) * 12 + int(date[5:7])


def build_repo(name: str, git_dir: Path, negatives: int, match: str = "size") -> list[dict[str, object]]:
    folders = FOLDERS[name]
    skip = unreadable(git_dir)
    history = [c for c in commits(git_dir) if c.sha not in skip]
    cases: list[dict[str, object]] = []
    for c in history:
        numbers = referenced_numbers(c.message)
        names = {n for f in folders for n in referenced_names(c.message, f)}
        if not (numbers or names) or not any(is_code(p, folders) for p in c.files):
            continue
        folder = folder_at(git_dir, c.parent, folders)
        if folder is None:
            continue
        at_parent = adr_files_at(git_dir, c.parent, folder)
        expected = sorted(p for p in at_parent if adr_number(p) in numbers or posixpath.basename(p) in names)
        if not expected:
            continue
        cases.append(
            {
                "repo": name,
                "commit": c.sha,
                "parent": c.parent,
                "kind": "positive",
                "folder": folder,
                "expected": expected,
            }
        )
    positives = {str(c["commit"]): c for c in cases}
    pool = [
        c
        for c in history
        if c.sha not in positives
        and not ADR_WORD.search(c.message)
        and not any(p.startswith(f + "/") for f in folders for p in c.files)
        and any(is_code(p, folders) for p in c.files)
    ]
    sizes = changed_lines(git_dir, folders) if match == "size" else {}
    by_sha = {c.sha: c for c in history}
    taken: set[str] = set()
    # by month, history order within (the first set's draw order, so --match month reproduces it)
    for sha, case in sorted(positives.items(), key=lambda kv: by_sha[kv[0]].date[:7]):
        date = by_sha[sha].date
        if match == "size":
            picks = nearest_in_size(sha, sizes.get(sha, 0), date, pool, sizes, taken, negatives)
        else:
            month = [n for n in pool if n.date[:7] == date[:7] and n.sha not in taken]
            picks = sorted(month, key=lambda n: _tie(sha, n.sha))[:negatives]
        for neg in picks:
            folder = folder_at(git_dir, neg.parent, folders)
            if folder is None:
                continue
            taken.add(neg.sha)
            negative: dict[str, object] = {
                "repo": name,
                "commit": neg.sha,
                "parent": neg.parent,
                "kind": "negative",
                "folder": folder,
                "expected": [],
            }
            if match == "size":
                negative |= {"lines": sizes.get(neg.sha), "for": sha}
            cases.append(negative)
        if match == "size":
            case["lines"] = sizes.get(sha, 0)
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append", required=True, help="OWNER/NAME=GITDIR")
    parser.add_argument("--negatives", type=int, default=2)
    parser.add_argument(
        "--match",
        choices=("size", "month"),
        default="size",
        help="size: per positive, the nearest-size code commits of nearby months (default); "
        "month: any code commits of the same month (the first set, which size alone separates)",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("guard_cases.json"))
    args = parser.parse_args()
    cases: list[dict[str, object]] = []
    for spec in args.repo:
        name, _, path = spec.partition("=")
        repo_cases = build_repo(name, Path(path), args.negatives, args.match)
        pos = sum(1 for c in repo_cases if c["kind"] == "positive")
        print(f"{name}: {pos} positives, {len(repo_cases) - pos} negatives", file=sys.stderr)
        cases.extend(repo_cases)
    payload = {
        "about": "guard dev set: commit ids and expected ADR paths (relative to the ADR folder at the parent); "
        "built by benchmarks/build_guard_set.py, rebuilt from local clones by `adr-review eval guard`",
        "negatives": args.match,
        "folders": {name: FOLDERS[name] for name in sorted({str(c["repo"]) for c in cases})},
        "cases": cases,
    }
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
