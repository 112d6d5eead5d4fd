"""Build the guard's dev set from real history: commit ids and expected ADR paths, nothing else.

    .venv/bin/python benchmarks/build_guard_set.py --repo cometbft/cometbft=/path/to/cometbft.git \
        --repo kumahq/kuma=/path/to/kuma.git ... [--negatives 2] [--out benchmarks/guard_cases.json]

Each --repo is a local clone or bare mirror (`git --git-dir` must work on it). For every non-merge
commit whose message names an ADR (app/adr_review/evals/guard_history.py: "ADR-038", "ADR 12", "MADR 055", a
path into the ADR folder) and that changes code outside the ADR folder, a positive: the commit, its
parent, the ADR folder at the parent and the folder-relative paths of the ADRs it names that exist
there. For each positive, `--negatives` code commits of the same month (same repository) whose
message names no ADR and that touch no ADR file, picked deterministically (by a hash of both ids).
`adr-review eval guard --cases FILE --repo NAME=GITDIR ...` rebuilds each case from the same clones.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import posixpath
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adr_review.core.guard import ignored  # noqa: E402
from adr_review.evals.guard_history import (  # noqa: E402
    ADR_WORD,
    adr_files_at,
    adr_number,
    commits,
    folder_at,
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
}
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc")


def is_code(path: str, folders: list[str]) -> bool:
    if any(path.startswith(f + "/") for f in folders):
        return False
    return not path.lower().endswith(DOC_SUFFIXES) and not ignored(path)


def build_repo(name: str, git_dir: Path, negatives: int) -> list[dict[str, object]]:
    folders = FOLDERS[name]
    history = list(commits(git_dir))
    cases: list[dict[str, object]] = []
    months: dict[str, list[str]] = {}
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
        months.setdefault(c.date[:7], []).append(c.sha)
    positives = {str(c["commit"]) for c in cases}
    by_month: dict[str, list[object]] = {}
    for c in history:
        if c.sha in positives or ADR_WORD.search(c.message):
            continue
        if any(p.startswith(f + "/") for f in folders for p in c.files):
            continue
        if c.date[:7] in months and any(is_code(p, folders) for p in c.files):
            by_month.setdefault(c.date[:7], []).append(c)
    taken: set[str] = set()
    for month, shas in sorted(months.items()):
        pool = by_month.get(month, [])
        for sha in shas:
            ranked = sorted(pool, key=lambda n: hashlib.sha256(f"{sha}{n.sha}".encode()).hexdigest())  # type: ignore[attr-defined]
            for neg in [n for n in ranked if n.sha not in taken][:negatives]:  # type: ignore[attr-defined]
                folder = folder_at(git_dir, neg.parent, folders)  # type: ignore[attr-defined]
                if folder is None:
                    continue
                taken.add(neg.sha)  # type: ignore[attr-defined]
                cases.append(
                    {
                        "repo": name,
                        "commit": neg.sha,
                        "parent": neg.parent,
                        "kind": "negative",
                        "folder": folder,
                        "expected": [],
                    }  # type: ignore[attr-defined]
                )
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append", required=True, help="OWNER/NAME=GITDIR")
    parser.add_argument("--negatives", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("guard_cases.json"))
    args = parser.parse_args()
    cases: list[dict[str, object]] = []
    for spec in args.repo:
        name, _, path = spec.partition("=")
        repo_cases = build_repo(name, Path(path), args.negatives)
        pos = sum(1 for c in repo_cases if c["kind"] == "positive")
        print(f"{name}: {pos} positives, {len(repo_cases) - pos} negatives", file=sys.stderr)
        cases.extend(repo_cases)
    payload = {
        "about": "guard dev set: commit ids and expected ADR paths (relative to the ADR folder at the parent); "
        "built by benchmarks/build_guard_set.py, rebuilt from local clones by `adr-review eval guard`",
        "folders": {name: FOLDERS[name] for name in sorted({str(c["repo"]) for c in cases})},
        "cases": cases,
    }
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
