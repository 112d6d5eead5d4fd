"""How many of the guard's listings on commits that name no ADR are wrong? A blind audit.

    cd benchmarks && ../.venv/bin/python guard_audit.py prepare --records records.json \
        --repo OWNER/NAME=GITDIR ... --out DIR [--set named]   # DIR/NNN/{diff.patch,adr.md}, DIR/items.json
    ../.venv/bin/python guard_audit.py score --records records.json [--set named]

The set counts a commit whose message names no ADR as a negative, so every listing on it is scored
wrong; but a change to the code an ADR decides about is worth pointing out whether or not its
message names the ADR. On the human-maintained repositories, `prepare` writes items for a judge, who
sees neither the kind nor the commit message: only the diff without the ADR folder and the ADR at
the parent, shuffled by a hash:

- `--set loud` (guard_audit_labels.json): the first ADR listed on every loud negative and, as a
  control, on 20 positives the guard hit (picked by a hash of the commit id);
- `--set named` (guard_audit_named.json): every enforced positive with the ADR its message names
  and, as a control, the first retrieved ADR of QUIET_CONTROLS negatives the guard was silent on.

A judge labels each item `related` (the diff changes what the ADR decides: it implements, extends,
changes or works against it; a shared word or the same area is not enough), `unrelated`, or
`unclear`; two judges per item (`label`, `label2`). `score` prints the share of each label per kind
and the silence the guard would have if the negatives' related listings were counted right;
`score --set named` the guard's hit rate over the positives whose named ADR the judges call related.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from guard_signals import AGENT_WRITTEN  # noqa: E402

from adr_review.evals.guard_history import diff_without, git  # noqa: E402

CONTROLS = 20  # hit positives mixed into the loud set
QUIET_CONTROLS = 22  # quiet negatives mixed into the named set
JUDGES = ("label", "label2")


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def items(records: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The first ADR listed on every loud human-maintained negative and on CONTROLS hit positives."""
    human = [r for r in records if r["repo"] not in AGENT_WRITTEN]
    loud = [r for r in human if r["kind"] == "negative" and r["listed"]]
    hits = sorted((r for r in human if r["kind"] == "positive" and r["hit"]), key=lambda r: _h(r["commit"]))
    chosen = loud + hits[:CONTROLS]
    out = [
        {"repo": r["repo"], "commit": r["commit"], "adr": r["listed"][0], "kind": r["kind"]} for r in chosen
    ]
    return sorted(out, key=lambda i: _h("audit" + i["commit"]))


def named_items(records: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Every enforced human-maintained positive with the ADR its message names (the one listed when
    the guard hit, else the first named among the retrieved, else the first named), and as a control
    the first retrieved ADR of QUIET_CONTROLS negatives the guard was silent on (picked by a hash), shuffled."""
    human = [r for r in records if r["repo"] not in AGENT_WRITTEN]
    out = []
    for r in human:
        if r["kind"] != "positive" or not r["enforced"]:
            continue
        retrieved = [c["path"] for c in r["retrieved"]]
        adr = next(
            (p for p in r["listed"] if p in r["enforced"]),
            next((p for p in retrieved if p in r["enforced"]), r["enforced"][0]),
        )
        out.append({"repo": r["repo"], "commit": r["commit"], "adr": adr, "kind": "positive"})
    quiet = sorted(
        (r for r in human if r["kind"] == "negative" and not r["listed"] and r["retrieved"]),
        key=lambda r: _h("quiet" + r["commit"]),
    )
    out += [
        {"repo": r["repo"], "commit": r["commit"], "adr": r["retrieved"][0]["path"], "kind": "negative"}
        for r in quiet[:QUIET_CONTROLS]
    ]
    return sorted(out, key=lambda i: _h("named" + i["commit"]))


SETS = {"loud": items, "named": named_items}


def prepare(
    records: Sequence[Mapping[str, Any]],
    cases: Sequence[Mapping[str, Any]],
    repos: Mapping[str, Path],
    out: Path,
    which: str = "loud",
) -> None:
    by_commit = {(c["repo"], c["commit"]): c for c in cases}
    out.mkdir(parents=True, exist_ok=True)
    listing = []
    for n, item in enumerate(SETS[which](records)):
        case = by_commit[(item["repo"], item["commit"])]
        git_dir = repos[item["repo"]]
        d = out / f"{n:03d}"
        d.mkdir(exist_ok=True)
        (d / "diff.patch").write_text(diff_without(git_dir, case["parent"], item["commit"], case["folder"]))
        adr = git(git_dir, "show", f"{case['parent']}:{case['folder']}/{item['adr']}")
        (d / "adr.md").write_bytes(adr)
        listing.append({"item": f"{n:03d}", "repo": item["repo"], "adr": item["adr"]})  # no kind, no commit
    (out / "items.json").write_text(json.dumps(listing, indent=1))


def score(records: Sequence[Mapping[str, Any]], labels: Sequence[Mapping[str, str]]) -> None:
    by_key = {(i["commit"], i["adr"]): i for i in items(records)}
    for n_judge, judge in enumerate(JUDGES, 1):
        counts: dict[str, Counter[str]] = {"negative": Counter(), "positive": Counter()}
        per_repo: dict[str, Counter[str]] = {}
        for lab in labels:
            item = by_key[(lab["commit"], lab["adr"])]
            counts[item["kind"]][lab[judge]] += 1
            if item["kind"] == "negative":
                per_repo.setdefault(item["repo"], Counter())[lab[judge]] += 1
        print(f"judge {n_judge}:")
        for kind, c in counts.items():
            total = sum(c.values())
            print(f"  {kind}s audited: {total}", {k: f"{v} ({v / total:.3f})" for k, v in sorted(c.items())})
        for repo, c in sorted(per_repo.items()):
            print(f"    negatives, {repo}:", dict(sorted(c.items())))
    human_negatives = [r for r in records if r["repo"] not in AGENT_WRITTEN and r["kind"] == "negative"]
    silent = sum(1 for r in human_negatives if not r["listed"])
    n = len(human_negatives)
    negatives = [lab for lab in labels if by_key[(lab["commit"], lab["adr"])]["kind"] == "negative"]
    print(f"silence on human-maintained negatives as the set counts it: {silent / n:.3f} ({silent}/{n})")
    for name, rule in (
        ("both judges call related", lambda lab: all(lab[j] == "related" for j in JUDGES)),
        ("either judge calls related", lambda lab: any(lab[j] == "related" for j in JUDGES)),
    ):
        related = sum(1 for lab in negatives if rule(lab))
        print(f"counting a listing right when {name}: {(silent + related) / n:.3f} ({silent + related}/{n})")
    print(agreement(labels))


def score_named(records: Sequence[Mapping[str, Any]], labels: Sequence[Mapping[str, str]]) -> None:
    """The guard's hit rate over the positives whose named ADR both judges call related."""
    by_key = {(i["commit"], i["adr"]): i for i in named_items(records)}
    by_commit = {r["commit"]: r for r in records}
    groups: dict[str, list[Mapping[str, Any]]] = {}
    control: Counter[str] = Counter()
    for lab in labels:
        item = by_key[(lab["commit"], lab["adr"])]
        if item["kind"] == "negative":
            control[lab["label"] if lab["label"] == lab["label2"] else "judges differ"] += 1
            continue
        verdict = lab["label"] if lab["label"] == lab["label2"] else "judges differ"
        groups.setdefault(verdict, []).append(by_commit[lab["commit"]])
    for verdict, rs in sorted(groups.items()):
        hits = sum(1 for r in rs if r["hit"])
        per_repo = Counter(r["repo"].split("/")[1] for r in rs)
        print(
            f"positives whose named ADR is {verdict}: {len(rs)}, guard hit {hits} ({hits / len(rs):.3f})",
            dict(per_repo),
        )
    print("control, quiet negatives' first retrieved ADR:", dict(control))
    loud_file = ROOT / "benchmarks" / "guard_audit_labels.json"
    if loud_file.exists():
        relabelled(records, groups, control, json.loads(loud_file.read_text())["labels"])
    print(agreement(labels))


def relabelled(
    records: Sequence[Mapping[str, Any]],
    groups: Mapping[str, Sequence[Mapping[str, Any]]],
    control: Mapping[str, int],
    loud_labels: Sequence[Mapping[str, str]],
) -> None:
    """An estimate of hit and silence with relatedness as the label, both audits together: a case is
    positive when the judges call its named ADR (positives) or its listed ADR (loud negatives) related,
    or, for the quiet negatives, in the share the control sample found related (an extrapolation
    from a small sample); listings on unrelated cases are wrong, a related listing is a hit."""
    human = [r for r in records if r["repo"] not in AGENT_WRITTEN and r["kind"] == "negative"]
    quiet = sum(1 for r in human if not r["listed"])
    kinds = {(i["commit"], i["adr"]): i["kind"] for i in items(records)}
    both = [
        lab
        for lab in loud_labels
        if kinds[(lab["commit"], lab["adr"])] == "negative" and lab["label"] == lab["label2"] == "related"
    ]
    loud_related = len(both)
    loud_unrelated = sum(1 for r in human if r["listed"]) - loud_related
    related, unrelated = groups.get("related", []), groups.get("unrelated", [])
    share = control.get("related", 0) / max(sum(control.values()), 1)
    positives = len(related) + loud_related + share * quiet
    hits = sum(1 for r in related if r["hit"]) + loud_related
    silent_unrelated = sum(1 for r in unrelated if not r["listed"])
    negatives = loud_unrelated + (1 - share) * quiet + len(unrelated)
    silence = ((1 - share) * quiet + silent_unrelated) / negatives
    print(
        f"relabelled by relatedness (estimate; quiet negatives related at the control's share {share:.3f}): "
        f"positives {positives:.0f}, hit {hits / positives:.3f}; negatives {negatives:.0f}, silence {silence:.3f}"
    )


def agreement(labels: Sequence[Mapping[str, str]]) -> str:
    agree = sum(1 for lab in labels if lab["label"] == lab["label2"])
    return f"judges agree on {agree}/{len(labels)} ({agree / len(labels):.3f}), Cohen's kappa {kappa(labels):.3f}"


def kappa(labels: Sequence[Mapping[str, str]]) -> float:
    """Cohen's kappa of the two judges: their agreement beyond what their label rates give by chance."""
    n = len(labels)
    observed = sum(1 for lab in labels if lab["label"] == lab["label2"]) / n
    first, second = Counter(lab["label"] for lab in labels), Counter(lab["label2"] for lab in labels)
    chance = sum(first[k] * second[k] for k in first) / (n * n)
    return (observed - chance) / (1 - chance) if chance < 1 else 1.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--records", type=Path, required=True)
    p.add_argument("--cases", type=Path, default=ROOT / "benchmarks" / "guard_cases.json")
    p.add_argument("--repo", action="append", required=True, help="OWNER/NAME=GITDIR")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--set", dest="which", choices=sorted(SETS), default="loud")
    s = sub.add_parser("score")
    s.add_argument("--records", type=Path, required=True)
    s.add_argument(
        "--labels", type=Path, default=None, help="default: benchmarks/guard_audit_{labels,named}.json"
    )
    s.add_argument("--set", dest="which", choices=sorted(SETS), default="loud")
    args = parser.parse_args(argv)
    records = json.loads(args.records.read_text())
    if args.cmd == "prepare":
        repos = {name: Path(path) for name, _, path in (x.partition("=") for x in args.repo)}
        prepare(records, json.loads(args.cases.read_text())["cases"], repos, args.out, args.which)
    else:
        default = {"loud": "guard_audit_labels.json", "named": "guard_audit_named.json"}[args.which]
        labels = json.loads((args.labels or ROOT / "benchmarks" / default).read_text())["labels"]
        (score if args.which == "loud" else score_named)(records, labels)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
