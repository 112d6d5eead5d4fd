"""Do the 644 shared ADRs parse the same as before? Field-by-field diff of two parser versions.

    .venv/bin/python benchmarks/parse_diff.py [--baseline 32a4cfb] [--corpora ../shared/corpora] [--show 5]

The baseline parser is the package of a git revision (`app/adr_review/`, or `app/` before the rename) (extracted with `git archive` into a
temporary folder, never checked out) and runs in a child interpreter with that folder first on
`sys.path`; the current parser is this checkout's. Both parse every corpus file on its own
(`parse_adr`) and every corpus folder as a whole (`load_adr_folder`: ids after de-duplication), and
every field of the `Adr` is compared except `text` and `content_hash` (the input).

Output: per field, how many ADRs differ, and up to `--show` examples of each (old -> new); for the
summary, also how many differ once whitespace and the separators the old parser inserted between
paragraphs (". ", "; ", "。") are ignored, which is the change issue 15 means to make there.
Exit status 0 always: the diff is a report to read, not a gate.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPORA = REPO / ".." / "shared" / "corpora"
FIELDS = (
    "adr_id",
    "folder_id",
    "title",
    "status",
    "raw_status",
    "date",
    "sections",
    "summary",
    "language",
    "links",
    "number",
    "extra",
)


def dump(corpora: Path) -> dict[str, dict[str, Any]]:
    """Every field of every corpus ADR, as parsed by the package PARSE_DIFF_PACKAGE names (the
    revisions before the rename call it `app`)."""
    import importlib

    name = os.environ.get("PARSE_DIFF_PACKAGE", "adr_review")
    package = importlib.import_module(name)
    load_adr_folder = importlib.import_module(f"{name}.adapters.adr_files").load_adr_folder
    parse_adr = importlib.import_module(f"{name}.core.adr").parse_adr

    out: dict[str, dict[str, Any]] = {}
    for folder in sorted(p for p in corpora.iterdir() if p.is_dir()):
        folder_ids = {a.path: a.adr_id for a in load_adr_folder(folder)[0]}
        for path in sorted(folder.rglob("*.md")):
            if path.name == "README.md":
                continue
            rel = path.relative_to(folder).as_posix()
            try:
                adr = parse_adr(rel, path.read_bytes())
            except Exception as exc:  # a report, not a test: record what the parser said
                out[f"{folder.name}/{rel}"] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            out[f"{folder.name}/{rel}"] = {
                "adr_id": adr.adr_id,
                "folder_id": folder_ids.get(rel),
                "title": adr.title,
                "status": adr.status,
                "raw_status": adr.raw_status,
                "date": adr.date,
                "sections": dict(adr.sections),
                "summary": adr.summary,
                "language": adr.language,
                "links": [[lk.kind, lk.target] for lk in adr.links],
                "number": adr.number,
                "extra": dict(adr.extra),
            }
    out["__parser__"] = {"package": str(Path(package.__file__).parent)}
    return out


def baseline_dump(ref: str, corpora: Path) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="parse-diff-") as tmp:
        archive = Path(tmp) / "parser.tar"
        listed = subprocess.run(
            ["git", "ls-tree", "--name-only", ref, "app/adr_review"], cwd=REPO, capture_output=True
        )
        name, folder = ("adr_review", "app/adr_review") if listed.stdout.strip() else ("app", "app")
        with archive.open("wb") as fh:
            subprocess.run(["git", "archive", ref, folder], cwd=REPO, stdout=fh, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        out_file = Path(tmp) / "baseline.json"
        root = str(Path(tmp) / "app") if name == "adr_review" else tmp
        env = {**os.environ, "PYTHONPATH": root, "PARSE_DIFF_PACKAGE": name}
        subprocess.run(
            [sys.executable, __file__, "--dump", str(out_file), "--corpora", str(corpora)],
            cwd=tmp,
            env=env,
            check=True,
        )
        data: dict[str, dict[str, Any]] = json.loads(out_file.read_text(encoding="utf-8"))
    assert data["__parser__"]["package"].startswith(tmp), "the baseline ran the current parser"
    return data


_SEPARATORS = re.compile(r"[\s.;。]+")


def _loose(summary: str) -> str:
    return _SEPARATORS.sub("", summary)


def diff(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], show: int) -> str:
    old.pop("__parser__", None)
    new.pop("__parser__", None)
    lines = [f"files: {len(old)} before, {len(new)} now"]
    for name in sorted(set(old) ^ set(new)):
        lines.append(f"  only {'before' if name in old else 'now'}: {name}")
    common = sorted(set(old) & set(new))
    errors = [
        (n, old[n].get("error"), new[n].get("error"))
        for n in common
        if "error" in old[n] or "error" in new[n]
    ]
    for name, before, now in errors:
        lines.append(f"  error {name}: {before!r} -> {now!r}")
    both = [n for n in common if "error" not in old[n] and "error" not in new[n]]
    counts: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for name in both:
        for field in FIELDS:
            a, b = old[name].get(field), new[name].get(field)
            if field == "sections" and a != b:
                for sec in sorted(set(a) | set(b)):
                    if a.get(sec) != b.get(sec):
                        counts[f"sections.{sec}"] += 1
                        examples.setdefault(f"sections.{sec}", []).append(
                            f"{name}: {_short(a.get(sec))} -> {_short(b.get(sec))}"
                        )
            elif field == "extra" and a != b:
                for key in sorted(set(a) | set(b)):
                    if a.get(key) != b.get(key):
                        counts[f"extra[{key}]"] += 1
                        examples.setdefault(f"extra[{key}]", []).append(
                            f"{name}: {_short(a.get(key))} -> {_short(b.get(key))}"
                        )
            elif a != b:
                counts[field] += 1
                examples.setdefault(field, []).append(f"{name}: {_short(a)} -> {_short(b)}")
                if field == "summary" and _loose(a) != _loose(b):
                    counts["summary (content)"] += 1
                    examples.setdefault("summary (content)", []).append(
                        f"{name}: {_short(a, 400)} -> {_short(b, 400)}"
                    )
    lines.append(f"parsed by both: {len(both)}")
    untouched = [
        f for f in FIELDS if not any(k == f or k.startswith(f + ".") or k.startswith(f + "[") for k in counts)
    ]
    lines.append("identical on every file: " + (", ".join(untouched) or "none"))
    for key in sorted(counts):
        lines.append(f"\n{key}: {counts[key]} ADRs differ")
        lines.extend(f"  {ex}" for ex in examples[key][:show])
    return "\n".join(lines)


def _short(value: Any, limit: int = 160) -> str:
    s = json.dumps(value, ensure_ascii=False)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="32a4cfb", help="git revision of the parser to compare with")
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--show", type=int, default=5, help="examples per differing field")
    ap.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # the child's mode
    args = ap.parse_args(argv)
    corpora = args.corpora.resolve()
    if args.dump:
        args.dump.write_text(json.dumps(dump(corpora), ensure_ascii=False), encoding="utf-8")
        return 0
    sys.path.insert(0, str(REPO))
    old = baseline_dump(args.baseline, corpora)
    new = dump(corpora)
    print(f"baseline {args.baseline} vs this checkout, corpora {corpora}")
    print(diff(old, new, args.show))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
