"""Would a floor set on a repository's own older history serve its newer code commits better than one floor?

    cd benchmarks && ../.venv/bin/python guard_floor_split.py --records records.json \
        --repo OWNER/NAME=GITDIR ... [--with title_text]

One floor for every folder is where the guard falls short on human-maintained repositories (kuma's
held-out silence is about 0.17: its ADRs describe the policies its code implements). A team could
calibrate its own floor from its own history: commits that name an ADR are positives there too. This
measures that idea before anything is built. Per repository, its cases (the records of one `adr-review
eval guard` run) are put in commit-time order and cut in two halves; the evidence model is the one
fitted on the *other* human-maintained repositories (calibrate_guard's fit, head in BM25 order), as in
guard_signals.py's leave-one-repository-out; the floor is either that fold's floor (one floor) or the
one chosen on the repository's own older half (the balanced point, or the lowest reaching silence 0.75
there). Every figure is on the newer half only, so both are held out in time; the agent-written
repositories take the model fitted on all the human-maintained ones. The within-repository AUC of the
top evidence (all of the repository's cases) says how much any floor could separate there.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import calibrate_guard as cg  # noqa: E402
from guard_signals import AGENT_WRITTEN, _pool  # noqa: E402

import adr_review.core.evidence as evidence  # noqa: E402

Record = Mapping[str, Any]


def commit_times(records: Sequence[Record], repos: Mapping[str, Path]) -> dict[str, int]:
    """Committer time of each record's commit, read from its clone in one `git show -s` call per repository."""
    out: dict[str, int] = {}
    for name, gitdir in repos.items():
        ids = sorted({str(r["commit"]) for r in records if r["repo"] == name})
        if not ids:
            continue
        shown = subprocess.run(
            ["git", "--git-dir", str(gitdir), "show", "-s", "--format=%H %ct", *ids],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        out |= {h: int(t) for h, t in (line.split() for line in shown.splitlines() if line.strip())}
    return out


def split(
    model: evidence.EvidenceModel, rs: Sequence[Record], when: Mapping[str, int]
) -> dict[str, dict[str, Any]]:
    """The newer half of `rs` scored with the fold's floor and with floors chosen on the older half."""
    ordered = sorted(rs, key=lambda r: when[str(r["commit"])])
    old, new = ordered[: len(ordered) // 2], ordered[len(ordered) // 2 :]
    floors = {
        "one floor": model.floor,
        "own floor, balanced": cg.choose_floor(model, old, None),
        "own floor, silence 0.75": cg.choose_floor(model, old, 0.75),
    }
    return {
        name: {
            "floor": floor,
            **cg.simulate(model, new, floor, "bm25"),
        }
        for name, floor in floors.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument("--repo", action="append", required=True, help="OWNER/NAME=GITDIR")
    parser.add_argument("--with", dest="extra", default="title_text", help="features added to the 9")
    args = parser.parse_args(argv)
    records = json.loads(args.records.read_text())
    repos = {name: Path(path) for name, _, path in (s.partition("=") for s in args.repo)}
    when = commit_times(records, repos)
    features = (*evidence.FEATURES, *(f for f in args.extra.split(",") if f))
    cg.ORDER = "bm25"
    human = [r for r in records if r["repo"] not in AGENT_WRITTEN]
    pooled: dict[tuple[bool, str], list[Mapping[str, float]]] = {}
    for repo in sorted({str(r["repo"]) for r in records}):
        agent = repo in AGENT_WRITTEN
        model = cg.fit_fold([r for r in human if r["repo"] != repo], features, None, 1.0)
        rs = [r for r in records if r["repo"] == repo]
        rows = split(model, rs, when)
        auc = cg.simulate(model, rs, model.floor, "bm25")["auc_top_evidence"]
        print(f"{repo} ({'agent' if agent else 'human'}; AUC of the top evidence {auc}):")
        for name, m in rows.items():
            pooled.setdefault((agent, name), []).append(m)
            print(
                f"  {name:24} floor {m['floor']:.3f}  hit {m['hit_rate']:.3f} of {m['positives']}"
                f"  silence {m['silence_rate']:.3f} of {m['negatives']}"
            )
    for (agent, name), parts in sorted(pooled.items()):
        print(
            f"pooled, {'agent-written' if agent else 'human-maintained'}, newer halves, {name}:", _pool(parts)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
