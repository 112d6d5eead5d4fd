"""A cold index with the cross-language channel off, this checkout against an earlier revision, in
the same minutes, and whether both leave a store that answers alike.

    .venv/bin/python benchmarks/cold_index_ab.py --base REV [--n 644] [--rounds 5] [--corpora ../shared/corpora]
                                                 [--work DIR]

Writes the generated folder of N ADRs (benchmarks/make_folder.py), checks out REV into a git worktree
under --work, then --rounds times, interleaved, each tree indexes the folder into an emptied store of
its own through the real CLI (`python -m adr_review index`, `retrieval.multilingual: off`, this venv's
interpreter, PYTHONPATH set to the tree's app/): wall and CPU seconds (user + system, the process
and its workers). Then whether both stores hold the same chunk vectors and term counts, and give
the same recall JSON (timing fields aside) for recall_ab.py's proposals. Nothing here is used by
the tests.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.recall_ab import ab_arguments, ab_trees, same_recall  # noqa: E402

CHANNEL_OFF = 'retrieval:\n  multilingual: "off"\n'


def cold_index(app: Path, folder: Path, store: Path, config: Path) -> tuple[float, float]:
    shutil.rmtree(store, ignore_errors=True)
    cmd = [sys.executable, "-m", "adr_review", "index", "--adr-dir", str(folder), "--store", str(store)]
    cmd += ["--config", str(config)]
    env = {**os.environ, "PYTHONPATH": str(app), "ADR_REVIEW_LOG_LEVEL": "WARNING"}
    before = os.times()
    start = time.perf_counter()
    subprocess.run(cmd, env=env, capture_output=True, check=True, cwd=app.parent)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def stored_arrays(store: Path) -> tuple[bytes, bytes]:
    """The mirror's chunk vectors and the lexical counts' arrays (not the files: the counts' file
    names the code's version, which differs between the trees)."""
    from adr_review.adapters.array_file import read_arrays
    from adr_review.adapters.lexical_cache import FORMAT

    (vectors,) = store.glob("index-*.npy")
    (lexical,) = store.glob("lexical-*.arrays")
    version = re.search(rb'"config": "([0-9a-f]+)"', lexical.read_bytes()[:4096])
    got = read_arrays(lexical, FORMAT, version.group(1).decode()) if version else None
    counts = b"".join(got[1][k].tobytes() for k in sorted(got[1])) if got else b"unreadable"
    return np.load(vectors).tobytes(), counts


def main() -> int:
    args = ab_arguments(__doc__, rounds=5)
    work, folder, _written, trees = ab_trees(args, "cold-ab-")
    base_tree = trees["base"].parent
    config = work / "channel-off.yml"
    config.write_text(CHANNEL_OFF, encoding="utf-8")
    stores = {name: work / f"cold-store-{name}" for name in trees}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, app in trees.items():
            times[name].append(cold_index(app, folder, stores[name], config))
    print(
        f"cold index of {args.n} ADRs, channel off, {args.rounds} each, interleaved "
        f"(load {os.getloadavg()[0]:.2f} at the end):"
    )
    for name, runs in times.items():
        label = args.base if name == "base" else "this checkout"
        walls = [w for w, _c in runs]
        print(
            f"  {label}: median {statistics.median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f}), "
            f"CPU median {statistics.median(c for _w, c in runs):.2f} s"
        )
    arrays = [stored_arrays(stores[name]) for name in trees]
    print(
        f"chunk vectors {'identical' if arrays[0][0] == arrays[1][0] else 'DIFFERENT'}, "
        f"term counts {'identical' if arrays[0][1] == arrays[1][1] else 'DIFFERENT'}"
    )
    same_recall(folder, trees, stores, config)
    print(f"worktree of {args.base}: {base_tree} (git worktree remove {base_tree})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
