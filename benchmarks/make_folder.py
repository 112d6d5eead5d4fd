"""Generate an N-ADR folder from the shared corpora, for the scale benchmark (benchmarks/bench_scale.py).

    .venv/bin/python benchmarks/make_folder.py N OUT [--corpora ../shared/corpora]

The 644 real ADRs of the shared corpora are taken in a fixed shuffled order (so any N mixes the
corpora and both languages) and cycled: the first 644 files are copied unchanged as
`<corpus>/<file>`; copy k >= 1 of an ADR is written as `copy-KK/<corpus>/<file>` with one line
appended ("<!-- benchmark copy KK -->"), so every file is distinct (its own content hash and
chunks) while keeping real lengths, real structure and the real chunks-per-ADR ratio. Ids that
collide across copies are de-duplicated by the loader, as in a real folder.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from adr_review.adapters.adr_files import list_adr_files  # noqa: E402

DEFAULT_CORPORA = REPO / ".." / "shared" / "corpora"


def sources(corpora: Path) -> list[tuple[Path, str]]:
    """(file, '<corpus>/<relative path>') for every ADR of every corpus, in a fixed shuffled order."""
    out = [
        (path, f"{corpus.name}/{rel}")
        for corpus in sorted(p for p in corpora.iterdir() if p.is_dir())
        for path, rel in list_adr_files(corpus)
    ]
    random.Random(0).shuffle(out)
    return out


def make_folder(n: int, out: Path, corpora: Path = DEFAULT_CORPORA) -> list[Path]:
    """Write n ADR files under `out` (emptied first); returns them in generation order."""
    files = sources(corpora.resolve())
    if not files:
        raise SystemExit(f"no ADRs under {corpora}")
    if out.exists():
        shutil.rmtree(out)
    written = []
    for i in range(n):
        src, rel = files[i % len(files)]
        copy = i // len(files)
        dest = out / (rel if copy == 0 else f"copy-{copy:02d}/{rel}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = src.read_bytes()
        if copy:
            data = data.rstrip(b"\n") + f"\n\n<!-- benchmark copy {copy:02d} -->\n".encode()
        dest.write_bytes(data)
        written.append(dest)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    args = ap.parse_args()
    written = make_folder(args.n, args.out, args.corpora)
    size = sum(p.stat().st_size for p in written)
    print(f"{len(written)} ADRs, {size / 1e6:.1f} MB in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
