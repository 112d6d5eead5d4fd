"""A recall process, this checkout against an earlier revision, in the same minutes.

    .venv/bin/python benchmarks/recall_ab.py --base REV [--n 644] [--rounds 15] [--corpora ../shared/corpora]
                                             [--work DIR]

Writes the generated folder of N ADRs (benchmarks/make_folder.py), checks out REV into a git worktree
under --work, and gives each tree a store of its own (warmed by two runs). Then, through the real CLI
with this venv's interpreter (`python -m adr_review recall --file P --offline --json`, PYTHONPATH set to
the tree's app/): whether both trees print the same JSON for every proposal of PROPOSALS (timing
fields aside), and --rounds processes of each tree on bench_scale.py's proposal, interleaved, so the
machine's drift falls on both alike. Prints the medians and ranges. Nothing here is used by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.make_folder import DEFAULT_CORPORA, make_folder  # noqa: E402

# proposals of the generated folder, Japanese and English, by path prefix
PROPOSALS = (
    "kompiro__karasu/20260419-01",
    "kompiro__karasu/20260328-04",
    "cosmos__cosmos-sdk/adr-007",
    "ministryofjustice__cloud-platform/003",
    "kumahq__kuma/001",
    "nats-io__nats-architecture-and-design/ADR-1",
)


def recall(
    app: Path, folder: Path, store: Path, proposal: Path, config: Path | None = None
) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "adr_review", "recall", "--adr-dir", str(folder), "--store", str(store)]
    cmd += ["--file", str(proposal), "--offline", "--json", *(["--config", str(config)] if config else [])]
    env = {**os.environ, "PYTHONPATH": str(app), "ADR_REVIEW_LOG_LEVEL": "WARNING"}
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=app.parent)
    return time.perf_counter() - start, done.stdout


def untimed(value: Any) -> Any:
    """The JSON without what differs from run to run (seconds, timings)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in ("seconds", "timings_ms")}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def ab_arguments(doc: str | None, rounds: int) -> argparse.Namespace:
    """The options every A/B script here takes."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the earlier revision (any git rev)")
    ap.add_argument("--n", type=int, default=644)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--work", type=Path, default=None)
    return ap.parse_args()


def ab_trees(args: argparse.Namespace, prefix: str) -> tuple[Path, Path, list[Path], dict[str, Path]]:
    """(work dir, the generated folder, its files, each tree's app/): the base revision checked out
    into a worktree under the work dir, this checkout beside it."""
    work = args.work or Path(tempfile.mkdtemp(prefix=prefix))
    folder = work / "adr"
    written = make_folder(args.n, folder, args.corpora)
    base_tree = work / "base"
    if not base_tree.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base_tree), args.base], cwd=REPO, check=True
        )
    return work, folder, written, {"base": base_tree / "app", "this": REPO / "app"}


def same_recall(
    folder: Path, trees: dict[str, Path], stores: dict[str, Path], config: Path | None = None
) -> None:
    """Print whether both trees' stores give the same recall JSON (timings aside) for PROPOSALS."""
    same = 0
    for prefix in PROPOSALS:
        found = sorted(folder.glob(f"{prefix}*"))
        if not found:
            print(f"not in the folder: {prefix}")
            continue
        outs = [
            untimed(json.loads(recall(app, folder, stores[name], found[0], config)[1]))
            for name, app in trees.items()
        ]
        same += outs[0] == outs[1]
        print(f"{'same' if outs[0] == outs[1] else 'DIFFERENT'}: {found[0].relative_to(folder)}")
    print(f"{same} of {len(PROPOSALS)} proposals: the same recall")


def main() -> int:
    args = ab_arguments(__doc__, rounds=15)
    work, folder, written, trees = ab_trees(args, "recall-ab-")
    base_tree = trees["base"].parent
    stores = {name: work / f"store-{name}" for name in trees}
    timed = written[len(written) // 3]  # bench_scale.py's proposal
    for name, app in trees.items():
        for _ in range(2):  # the first indexes; the second leaves every cache as a recall finds it
            recall(app, folder, stores[name], timed)
    same_recall(folder, trees, stores)
    times: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, app in trees.items():
            times[name].append(recall(app, folder, stores[name], timed)[0])
    print(
        f"recall process on {timed.relative_to(folder)}, {args.rounds} each, interleaved "
        f"(load {os.getloadavg()[0]:.2f} at the end):"
    )
    for name, ts in times.items():
        label = args.base if name == "base" else "this checkout"
        print(f"  {label}: median {statistics.median(ts):.3f} s ({min(ts):.3f}-{max(ts):.3f})")
    print(f"worktree of {args.base}: {base_tree} (git worktree remove {base_tree})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
