"""Does an ADR's recency separate commits that name it from commits that name none? Held out.

    cd benchmarks && ../.venv/bin/python guard_recency.py --records records.json \
        --repo OWNER/NAME=GITDIR ... [--with newer_log --with newer_log,added_1y ...] [--per-repo]

A commit that names an ADR usually implements a decision taken weeks before; a same-size commit that
names none is listed against whatever ADR its words match, of any age. This adds to each retrieved
candidate of an `adr-review eval guard` run features of its age, read back from the same clones
(the ADR folder at the case's parent, the history of that folder):

- `num_rank`: the share of the folder's numbered ADRs whose number is at most this one's (the newest 1);
  `newer_log`: log(1 + how many ADRs have a higher number); `new5` / `new10`: among the 5 / 10 newest;
- `age`: log(1 + days from the commit that added the file to the case's parent commit);
  `added_1y`: added less than a year before; `mod_age` / `mod_recent`: the same from its last change
  before the parent (by commit time, not ancestry), and changed within 180 days.

It prints the age of the named ADR at the positives' parents, and the held-out figures of
guard_signals.py (human-maintained repositories leave-one-repository-out; agent-written ones by the
model fitted on the human ones) for the 9 + title_text with and without each feature set.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import re
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from guard_signals import AGENT_WRITTEN, held_out  # noqa: E402

import adr_review.core.evidence as evidence  # noqa: E402
from adr_review.evals.guard_history import git  # noqa: E402

NEW = ("num_rank", "newer_log", "new5", "new10", "age", "added_1y", "mod_age", "mod_recent")
DAY = 86400
_NUMBER = re.compile(r"\d+")


def number(path: str) -> int | None:
    m = _NUMBER.search(path.rsplit("/", 1)[-1])
    return int(m.group()) if m else None


def folder_history(git_dir: Path, folder: str) -> tuple[dict[str, list[int]], dict[str, int]]:
    """Per ADR path (relative to the folder): the sorted times of the commits that touched it, and
    the time of the first that added it."""
    out = git(git_dir, "log", "--all", "--name-status", "--format=@%ct", "--", folder).decode(
        "utf-8", "replace"
    )
    touched: dict[str, list[int]] = defaultdict(list)
    added: dict[str, int] = {}
    when = 0
    for line in out.splitlines():
        if line.startswith("@"):
            when = int(line[1:])
            continue
        parts = line.split("\t")
        if len(parts) < 2 or not parts[-1].startswith(folder + "/"):
            continue
        rel = parts[-1][len(folder) + 1 :]
        touched[rel].append(when)
        if parts[0][:1] in "ARC":
            added[rel] = min(added.get(rel, when), when)
    return {p: sorted(ts) for p, ts in touched.items()}, added


def augment(
    records: list[dict[str, Any]], cases: Sequence[Mapping[str, Any]], repos: Mapping[str, Path]
) -> None:
    by_commit = {(c["repo"], c["commit"]): c for c in cases}
    histories = {
        key: folder_history(repos[key[0]], key[1])
        for key in {(c["repo"], c["folder"]) for c in by_commit.values()}
    }
    old = math.log1p(3650)  # an ADR with no add in the history: ten years
    for r in records:
        case = by_commit[(r["repo"], r["commit"])]
        git_dir = repos[r["repo"]]
        at = int(git(git_dir, "log", "-1", "--format=%ct", case["parent"]).strip())
        listing = git(git_dir, "ls-tree", "-r", "--name-only", case["parent"], "--", case["folder"])
        files = [p[len(case["folder"]) + 1 :] for p in listing.decode().splitlines() if p.endswith(".md")]
        numbers = sorted(n for n in map(number, files) if n is not None)
        touched, added = histories[(r["repo"], case["folder"])]
        for cand in r["retrieved"]:
            f = cand["features"]
            n = number(cand["path"])
            below = bisect.bisect_right(numbers, n) if n is not None else None
            newer = len(numbers) - below if below is not None else len(numbers) / 2
            f["num_rank"] = below / len(numbers) if below is not None and numbers else 0.5
            f["newer_log"] = math.log1p(newer)
            f["new5"] = float(newer < 5)
            f["new10"] = float(newer < 10)
            first = added.get(cand["path"])
            before = [t for t in touched.get(cand["path"], []) if t <= at]
            last = before[-1] if before else first
            f["age"] = math.log1p(max(at - first, 0) / DAY) if first is not None else old
            f["added_1y"] = float(first is not None and at - first < 365 * DAY)
            f["mod_age"] = math.log1p(max(at - last, 0) / DAY) if last is not None else old
            f["mod_recent"] = float(last is not None and at - last < 180 * DAY)


def named_age(records: Sequence[Mapping[str, Any]], agent: bool) -> str:
    """The age at the parent of the first enforced named ADR among the retrieved, over positives."""
    days = sorted(
        math.expm1(c["features"]["age"])
        for r in records
        if r["kind"] == "positive" and (r["repo"] in AGENT_WRITTEN) == agent
        for c in [next((c for c in r["retrieved"] if c["path"] in r["enforced"]), None)]
        if c is not None
    )
    if not days:
        return "none"
    share = {d: round(sum(x < d for x in days) / len(days), 3) for d in (90, 365)}
    return f"{len(days)} positives, median {round(days[len(days) // 2])} days, under 90 days {share[90]}, under a year {share[365]}"


def per_repo(records: Sequence[Mapping[str, Any]], features: Sequence[str]) -> None:
    """Each human-maintained repository held out, and the weights fitted on all of them."""
    import calibrate_guard as cg

    human = [r for r in records if r["repo"] not in AGENT_WRITTEN]
    for repo in sorted({r["repo"] for r in human}):
        model = cg.fit_fold([r for r in human if r["repo"] != repo], features, None, 1.0)
        m = cg.simulate(model, [r for r in human if r["repo"] == repo], model.floor, "bm25")
        print(f"  {repo}: floor {model.floor}, hit {m['hit_rate']:.3f}, silence {m['silence_rate']:.3f}")
    model = cg.fit_fold(human, features, None, 1.0)
    print("  weights fitted on all of them:", {k: round(v, 3) for k, v in model.weights.items()})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument("--cases", type=Path, default=ROOT / "benchmarks" / "guard_cases.json")
    parser.add_argument("--repo", action="append", required=True, help="OWNER/NAME=GITDIR")
    parser.add_argument(
        "--with", dest="extra", action="append", default=[], help="features added to the 9 + title_text"
    )
    parser.add_argument("--per-repo", action="store_true", help="each human-maintained repository apart")
    args = parser.parse_args(argv)
    records = json.loads(args.records.read_text())
    repos = {name: Path(path) for name, _, path in (s.partition("=") for s in args.repo)}
    augment(records, json.loads(args.cases.read_text())["cases"], repos)
    print("age of the named ADR, human-maintained:", named_age(records, agent=False))
    print("age of the named ADR, agent-written:", named_age(records, agent=True))
    evidence.GUARD_FEATURES = (*evidence.GUARD_FEATURES, *NEW)  # let the fit weigh them
    base = (*evidence.FEATURES, "title_text")
    print("held out, the 9 + title_text:", held_out(records, base))
    if args.per_repo:
        per_repo(records, base)
    for extra in args.extra or list(NEW):
        print(f"held out, the 9 + title_text + {extra}:", held_out(records, (*base, *extra.split(","))))
        if args.per_repo:
            per_repo(records, (*base, *extra.split(",")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
