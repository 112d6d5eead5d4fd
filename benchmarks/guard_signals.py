"""Try new guard signals on the records of `adr-review eval guard`, leave-one-repository-out.

    .venv/bin/python benchmarks/guard_signals.py augment --records records.json --cases FILE \
        --repo OWNER/NAME=GITDIR ... --out augmented.json
    .venv/bin/python benchmarks/guard_signals.py loro --records augmented.json [--group human|agent|all]

`augment` adds candidate features the shipped guard does not compute, read back from the same clones
(the diff parent..commit without the ADR folder, the folder at the parent, the masked title):

- `intro_n` / `intro_idf` / `intro_z`: identifiers the diff introduces (CamelCase or snake_case
  tokens of added lines that are in no removed and no context line of the diff) that the ADR names
  (count; summed IDF over the folder; that sum as a z-score over the folder's ADRs); `intro_dec_n`
  the same counted only in the ADR's Decision section and its code blocks; `intro_share` the share
  of the introduced identifiers the ADR names;
- `noun_n` / `noun_z`: the ADR's own specific terms (named at least twice in it, by at most two ADRs
  of the folder) found in added lines, a count and its z-score over the folder;
- `agree`: in how many of the channels bm25_z, dense_z, path_z, added_rare_z the candidate is first
  among the retrieved; `agree3` 1 when it is first in bm25_z, dense_z and path_z at once;
- `title_adr` / `title_adr_z`: the share of the masked PR title's words found in the ADR's title
  alone, and its z-score over the folder.

`loro` fits the guard's evidence model (benchmarks/calibrate_guard.py: same fit, same floor rule,
same replay, head in BM25 order) on all human-maintained repositories but one and scores the one
left out, for the review's features plus each new one (or the `--with` sets); the agent-written
repositories (AGENT_WRITTEN) are scored apart by the model fitted on all the human-maintained
ones. Every figure it prints is held out except the shipped guard's replay.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import adr_review.core.evidence as evidence  # noqa: E402
from adr_review.adapters.adr_files import load_adr_folder  # noqa: E402
from adr_review.core.adr import Adr  # noqa: E402
from adr_review.core.guard import words  # noqa: E402
from adr_review.core.guard_features import _zs  # noqa: E402
from adr_review.evals.guard_history import adr_files_at, diff_without, git, mask, write_folder  # noqa: E402

NEW = (
    "intro_n",
    "intro_idf",
    "intro_z",
    "intro_dec_n",
    "intro_share",
    "noun_n",
    "noun_z",
    "agree",
    "agree3",
    "title_adr",
    "title_adr_z",
    "title_adr_n",
    "title_idf",
    "title_text",
    "title_text_z",
)
# CamelCase (an inner capital) or snake_case (an inner underscore), 5 characters at least
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FENCE = re.compile(r"```.*?```", re.S)
AGENT_WRITTEN = {"iog-creator/Gemantria", "sapientpants/sonarqube-mcp-server"}


def identifiers(text: str) -> set[str]:
    out = set()
    for tok in _IDENT.findall(text):
        t = tok.strip("_")
        if len(t) < 5:
            continue
        if "_" in t or re.search(r"[a-z][A-Z]", t):
            out.add(t.lower())
    return out


def diff_sides(diff: str) -> tuple[list[str], list[str], list[str]]:
    """(added, removed, context) lines of a unified diff."""
    added: list[str] = []
    removed: list[str] = []
    context: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ", "@@")):
            continue
        if line.startswith("+"):
            added.append(line[1:])
        elif line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith(" "):
            context.append(line[1:])
    return added, removed, context


def decision_text(adr: Adr) -> str:
    dec = " ".join(v for k, v in adr.sections.items() if "decision" in k.lower())
    return dec + "\n" + "\n".join(_FENCE.findall(adr.text))


def case_features(adrs: Sequence[Adr], diff: str, title: str) -> dict[str, dict[str, float]]:
    """The new features of every ADR of the folder for one case."""
    added, removed, context = diff_sides(diff)
    old = identifiers("\n".join(removed)) | identifiers("\n".join(context))
    intro = identifiers("\n".join(added)) - old
    added_words = set(words("\n".join(added)))
    ids = {a.path: identifiers(f"{a.title}\n{a.text}") for a in adrs}
    dec_ids = {a.path: identifiers(decision_text(a)) for a in adrs}
    id_df: Counter[str] = Counter(t for s in ids.values() for t in s)
    n = max(len(adrs), 1)
    tf = {a.path: Counter(words(f"{a.title}\n{a.text}")) for a in adrs}
    df: Counter[str] = Counter(t for c in tf.values() for t in c)
    title_words = set(words(title))
    adr_titles = {a.path: set(words(a.title)) for a in adrs}
    title_df: Counter[str] = Counter(t for s in adr_titles.values() for t in s)
    text_words = {a.path: set(tf[a.path]) for a in adrs}

    def idf(t: str) -> float:
        return math.log((n + 1) / (title_df[t] + 0.5))

    out: dict[str, dict[str, float]] = {}
    for a in adrs:
        hit = intro & ids[a.path]
        own = {t for t, k in tf[a.path].items() if k >= 2 and df[t] <= 2}
        adr_title = adr_titles[a.path]
        shared = title_words & adr_title
        mass = sum(idf(t) for t in title_words)
        out[a.path] = {
            "intro_n": math.log1p(len(hit)),
            "intro_idf": sum(math.log(n / id_df[t]) for t in hit),
            "intro_dec_n": math.log1p(len(intro & dec_ids[a.path])),
            "intro_share": len(hit) / len(intro) if intro else 0.0,
            "noun_n": math.log1p(len(own & added_words)),
            "title_adr": len(shared) / len(title_words) if title_words else 0.0,
            "title_adr_n": math.log1p(len(shared)),
            "title_idf": sum(idf(t) for t in shared) / mass if mass else 0.0,
            "title_text": len(title_words & text_words[a.path]) / len(title_words) if title_words else 0.0,
        }
    for name, base in (
        ("intro_z", "intro_idf"),
        ("noun_z", "noun_n"),
        ("title_adr_z", "title_adr"),
        ("title_text_z", "title_text"),
    ):
        zs = _zs({p: f[base] for p, f in out.items()})
        for p, z in zs.items():
            out[p][name] = z
    return out


def agreement(retrieved: Sequence[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """(agree, agree3) of each retrieved candidate."""
    channels = ("bm25_z", "dense_z", "path_z", "added_rare_z")
    best = {ch: max((c["features"][ch] for c in retrieved), default=0.0) for ch in channels}
    out = []
    for c in retrieved:
        first = {ch for ch in channels if c["features"][ch] >= best[ch] - 1e-12}
        out.append((float(len(first)), 1.0 if {"bm25_z", "dense_z", "path_z"} <= first else 0.0))
    return out


def augment(
    records: list[dict[str, Any]], cases: Sequence[Mapping[str, Any]], repos: Mapping[str, Path]
) -> None:
    by_commit = {(c["repo"], c["commit"]): c for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        for i, r in enumerate(records):
            case = by_commit[(r["repo"], r["commit"])]
            git_dir = repos[r["repo"]]
            target = Path(tmp) / r["repo"].replace("/", "__")
            write_folder(adr_files_at(git_dir, case["parent"], case["folder"]), target)
            adrs, _errors = load_adr_folder(target)
            raw = git(git_dir, "log", "-1", "--format=%s", r["commit"]).decode("utf-8", "replace").strip()
            diff = diff_without(git_dir, case["parent"], r["commit"], case["folder"])
            feats = case_features(adrs, diff, mask(raw, case["folder"]))
            for c, (agree, agree3) in zip(r["retrieved"], agreement(r["retrieved"]), strict=True):
                c["features"] |= feats.get(c["path"], dict.fromkeys(set(NEW) - {"agree", "agree3"}, 0.0))
                c["features"] |= {"agree": agree, "agree3": agree3}
            if i % 25 == 0:
                print(f"augment: {i}/{len(records)}", file=sys.stderr)


def _pool(parts: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Micro-averaged figures of several repositories' `simulate` results."""
    p = sum(m["positives"] for m in parts)
    q = sum(m["negatives"] for m in parts)
    return {
        "hit": round(sum(m["hit_rate"] * m["positives"] for m in parts) / max(p, 1), 3),
        "silence": round(sum(m["silence_rate"] * m["negatives"] for m in parts) / max(q, 1), 3),
        "r5": round(sum(m["recall@5"] * m["positives"] for m in parts) / max(p, 1), 3),
        "positives": p,
        "negatives": q,
    }


def held_out(
    records: Sequence[Mapping[str, Any]], features: Sequence[str], refit: bool = True
) -> dict[str, dict[str, float]]:
    """Held-out figures (calibrate_guard's fit, floor rule and replay, head in BM25 order):
    human-maintained repositories leave-one-repository-out among themselves; the agent-written
    ones scored by the model and floor fitted on all the human-maintained ones."""
    import calibrate_guard as cg

    cg.ORDER = "bm25"
    human = [r for r in records if r["repo"] not in AGENT_WRITTEN]
    agent = [r for r in records if r["repo"] in AGENT_WRITTEN]
    parts = []
    for repo in sorted({r["repo"] for r in human}):
        model = cg.fit_fold([r for r in human if r["repo"] != repo], features, None, 1.0, refit)
        parts.append(cg.simulate(model, [r for r in human if r["repo"] == repo], model.floor, "bm25"))
    out = {"human": _pool(parts)}
    if agent:
        model = cg.fit_fold(human, features, None, 1.0, refit)
        out["agent"] = _pool([cg.simulate(model, agent, model.floor, "bm25")])
    return out


def shipped(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """The shipped guard (its model and floor as they are), replayed: not fitted on these records
    beyond its floor, which was chosen on the first draw of the three first repositories."""
    import calibrate_guard as cg

    from adr_review.core.guard_model import GUARD_EVIDENCE

    out = {}
    for name, group in (("human", False), ("agent", True)):
        rs = [r for r in records if (r["repo"] in AGENT_WRITTEN) == group]
        if rs:
            out[name] = _pool([cg.simulate(GUARD_EVIDENCE, rs, GUARD_EVIDENCE.floor, "bm25")])
    return out


CONFIGS: dict[str, tuple[str, ...]] = {
    "the 9 + the guard's 4": ("added_rare_z", "path_z", "deps", "margin"),
    **{f"the 9 + {name}": (name,) for name in NEW},
    "the 9 + intro_z, noun_z, agree, title_adr_z": ("intro_z", "noun_z", "agree", "title_adr_z"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("augment")
    a.add_argument("--records", type=Path, required=True)
    a.add_argument("--cases", type=Path, required=True)
    a.add_argument("--repo", action="append", required=True, help="OWNER/NAME=GITDIR")
    a.add_argument("--out", type=Path, required=True)
    lo = sub.add_parser("loro")
    lo.add_argument("--records", type=Path, required=True)
    lo.add_argument(
        "--with", dest="extra", action="append", default=[], help="comma-separated features added to the 9"
    )
    args = parser.parse_args(argv)
    if args.cmd == "augment":
        records = json.loads(args.records.read_text())
        cases = json.loads(args.cases.read_text())["cases"]
        repos = {name: Path(path) for name, _, path in (s.partition("=") for s in args.repo)}
        augment(records, cases, repos)
        args.out.write_text(json.dumps(records))
        return 0
    evidence.GUARD_FEATURES = (*evidence.GUARD_FEATURES, *NEW)  # let the fit weigh the new features
    records = json.loads(args.records.read_text())
    base = tuple(evidence.FEATURES)
    print("shipped (replayed, not fitted here):", shipped(records))
    print("held out, review's model, floor only:", held_out(records, base, refit=False))
    print("held out, refit, the review's 9:", held_out(records, base))
    configs = {f"the 9 + {e}": tuple(e.split(",")) for e in args.extra} or CONFIGS
    for name, extra in configs.items():
        print(f"held out, refit, {name}:", held_out(records, (*base, *extra)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
