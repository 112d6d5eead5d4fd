"""Fit the guard's evidence model and its floor on the records of `adr-review eval guard --records`.

    .venv/bin/python benchmarks/calibrate_guard.py --records guard-records.json [--silence 0.8] [--write --drawn size]

The model is a logistic like the review's (app/adr_review/core/evidence.py), fitted with the same `fit` as
benchmarks/calibrate_evidence.py on the review's features and the guard's own
(app/adr_review/core/guard_features.py: they do not grow with the diff's size), over the rows of the index's first 2 * HEAD candidates
of each case, labelled 1 for the ADRs the commit names. The guard re-ranks those by the evidence and
lists, of its new top 5, at most 3 whose evidence passes the floor and that share words with a diff
line (`lines` in the record): `simulate` replays exactly that. The floor is the lowest at which the
training cases' negatives are silent at least `--silence` of the time.

Leave-one-repository-out: each repository is scored with the model and floor fitted on the others;
those pooled figures are the held-out ones. `--exclude` leaves a repository out of everything (the
agent-written ones: benchmarks/guard_signals.py scores them apart, held out). `--write` fits on every record and writes
app/adr_review/core/guard_model.py; its figures on the same records are in-sample: say so. The records
do not say which draw of the guard set they were made from, so `--write` needs `--drawn month|size`
(the `build_guard_set.py --match` the cases were drawn with); the docstring names it, and the set
benchmarks/guard_cases.json holds now when that is another one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from calibrate_evidence import Query, fit, write_model  # noqa: E402

from adr_review.core.evidence import FEATURES, GUARD_FEATURES, HEAD, EvidenceModel  # noqa: E402
from adr_review.core.evidence_model import DEFAULT_EVIDENCE  # noqa: E402
from adr_review.core.guard import MAX_SHOWN  # noqa: E402
from adr_review.evals.guard import MRR_DEPTH, K, auc  # noqa: E402

Record = Mapping[str, Any]
ORDER = "evidence"  # the guard's head order: "evidence" or "bm25" (--order)
LARGE = 100  # changed lines: the negatives as large as a typical positive's lower quartile


def targets(r: Record) -> set[str]:
    return set(r["enforced"])


def as_query(r: Record) -> Query:
    return Query(
        r["repo"],
        "en",
        max(len(r["enforced"]), 1),
        [(c["features"], c["path"] in targets(r)) for c in r["retrieved"]],
    )


def simulate(
    model: EvidenceModel, records: Sequence[Record], floor: float, order: str = ""
) -> dict[str, float]:
    """The guard's figures with `model` and `floor` on `records` (as app/adr_review/core/guard.py decides)."""
    order = order or ORDER
    pos = [r for r in records if r["kind"] == "positive" and r["enforced"]]
    neg = [r for r in records if r["kind"] == "negative"]
    hits = recall = rr = 0.0
    silent = 0
    tops_pos: list[float] = []
    tops_neg: list[float] = []
    for r in [*pos, *neg]:
        rows = _ordered(model, r, order)
        head = rows[:HEAD]
        listed = _listing(r, head, floor)
        top = head[0][0] if head else 0.0
        if r["kind"] == "negative":
            silent += not listed
            tops_neg.append(top)
            continue
        exp = targets(r)
        ranked = [path for _p, path, _l in rows][:MRR_DEPTH]
        hits += bool(exp & set(listed))
        recall += len(exp & set(ranked[:K])) / len(exp)
        rr += next((1.0 / (i + 1) for i, path in enumerate(ranked) if path in exp), 0.0)
        tops_pos.append(top)
    n = max(len(pos), 1)
    large = [r for r in neg if r["changed_lines"] >= LARGE]
    return {
        "positives": len(pos),
        "negatives": len(neg),
        "hit_rate": round(hits / n, 4),
        "recall@5": round(recall / n, 4),
        "mrr": round(rr / n, 4),
        "silence_rate": round(silent / max(len(neg), 1), 4),
        "auc_top_evidence": round(auc(tops_pos, tops_neg) or 0.0, 4),
        # the set's confound: positives are much larger changes than negatives (docs/benchmarks.md)
        "auc_changed_lines": round(
            auc([r["changed_lines"] for r in pos], [r["changed_lines"] for r in neg]) or 0.0, 4
        ),
        f"negatives_{LARGE}+_lines": len(large),
        f"silence_{LARGE}+_lines": round(
            sum(1 for r in large if not _listed(model, r, floor, order)) / max(len(large), 1), 4
        ),
    }


def _ordered(model: EvidenceModel, r: Record, order: str) -> list[tuple[float, str, bool]]:
    """(evidence, path, has a matching line) of the retrieved candidates in the guard's order: by
    evidence, or by BM25 (ties by evidence)."""
    rows = [
        (model.probability(c["features"]), c["path"], c["lines"], c["features"]["bm25_z"])
        for c in r["retrieved"]
    ]
    key = (lambda t: (-t[3], -t[0])) if order == "bm25" else (lambda t: (-t[0],))
    return [(p, path, lines) for p, path, lines, _b in sorted(rows, key=key)]


def _listed(model: EvidenceModel, r: Record, floor: float, order: str) -> list[str]:
    return _listing(r, _ordered(model, r, order)[:HEAD], floor)


def _listing(r: Record, head: Sequence[tuple[float, str, bool]], floor: float) -> list[str]:
    """What the guard lists: the ADRs the change names (the record's `named`, those with a matching
    line) first whatever their evidence, in the ranking's order (the head's, then the index's order
    of what it returned, then the folder's), then the head's that pass the floor and have a matching line."""
    place = {
        p: i
        for i, p in enumerate(
            dict.fromkeys([*(h[1] for h in head), *(c["path"] for c in r.get("retrieved", ()))])
        )
    }
    named = sorted(
        (n["path"] for n in r.get("named", ()) if n["lines"]), key=lambda p: place.get(p, len(place))
    )
    scored = [path for p, path, lines in head if p >= floor and lines and path not in named]
    return [*named, *scored][:MAX_SHOWN]


def choose_floor(model: EvidenceModel, records: Sequence[Record], silence: float | None) -> float:
    """The lowest floor whose silence on `records` reaches `silence`; None: the floor that maximises
    the lower of the hit rate and the silence rate (the balanced point)."""
    grid = [step / 200 for step in range(1, 200)]
    if silence is None:
        return max(
            grid, key=lambda f: (min((m := simulate(model, records, f))["hit_rate"], m["silence_rate"]), -f)
        )
    for floor in grid:
        if simulate(model, records, floor)["silence_rate"] >= silence:
            return floor
    return grid[-1]


def fit_fold(
    records: Sequence[Record], features: Sequence[str], silence: float | None, l2: float, refit: bool = True
) -> EvidenceModel:
    """The model fitted on `records` (or, refit=False, the review's model as shipped) with its floor."""
    model = fit([as_query(r) for r in records], features, l2) if refit else DEFAULT_EVIDENCE
    floor = choose_floor(model, records, silence)
    return replace(model, floor=floor, med=floor, high=floor)


GUARD_SET = ROOT / "benchmarks" / "guard_cases.json"


def shipped_set(path: Path = GUARD_SET) -> tuple[int, str]:
    """(cases, how their negatives were drawn) of the guard set in the repository now."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return len(data["cases"]), str(data.get("negatives") or "month")  # the first set did not say


def model_note(
    cases: int,
    repos: Sequence[str],
    what: str,
    order: str,
    floor: float,
    rule: str,
    figures: Mapping[str, float],
    drawn: str,
    shipped: tuple[int, str],
    excluded: Sequence[str] = (),
) -> str:
    """What guard_model.py's docstring says it was fitted on: `cases` records of the draw `drawn`, and,
    when the repository's set is another one now, which (so the docstring never cites a set it was not
    fitted on)."""
    now = (
        ""
        if shipped == (cases, drawn)
        else f" benchmarks/guard_cases.json now holds {shipped[0]} cases drawn with `--match {shipped[1]}`;"
        " the shipped model's figures on them are in docs/benchmarks.md."
    )
    return (
        f"{cases} cases of the guard set drawn with `benchmarks/build_guard_set.py --match {drawn}` "
        f"({', '.join(repos)}{'; left out: ' + ', '.join(excluded) if excluded else ''}): {what}; head order {order}; floor {floor} chosen on the same cases {rule} "
        f"(in-sample figures: {dict(figures)}).{now} Held-out (leave-one-repository-out) figures: "
        "docs/benchmarks.md."
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument(
        "--features",
        default=",".join((*FEATURES, *GUARD_FEATURES)),
        help="comma-separated (default: the review's and the guard's, app/adr_review/core/guard_features.py)",
    )
    parser.add_argument(
        "--silence",
        type=float,
        default=None,
        help="negatives' silence the floor must reach (default: balanced)",
    )
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--order", choices=("evidence", "bm25"), default="evidence", help="the head's order")
    parser.add_argument(
        "--review-model",
        action="store_true",
        help="no fit: the review's evidence model, only the floor chosen",
    )
    parser.add_argument(
        "--write", action="store_true", help="fit on all records, write app/adr_review/core/guard_model.py"
    )
    parser.add_argument(
        "--drawn",
        choices=("size", "month"),
        default=None,
        help="with --write: the build_guard_set.py --match the records' cases were drawn with",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="OWNER/NAME",
        help="a repository left out of the fit and the folds (the agent-written ones, reported apart)",
    )
    args = parser.parse_args(argv)
    if args.write and args.drawn is None:
        print("calibrate_guard: --write needs --drawn month|size (the records do not say)", file=sys.stderr)
        return 2
    global ORDER
    ORDER = args.order
    records = [r for r in json.loads(args.records.read_text()) if r["repo"] not in set(args.exclude)]
    features = [f.strip() for f in args.features.split(",") if f.strip()]
    repos = sorted({r["repo"] for r in records})
    if len(repos) < 2:
        print(
            f"calibrate_guard: leave-one-repository-out needs records of at least 2 repositories, "
            f"these have {len(repos)} ({', '.join(repos) or 'none'})",
            file=sys.stderr,
        )
        return 2
    held: list[Record] = []
    pooled: dict[str, float] = {}
    for repo in repos:
        train = [r for r in records if r["repo"] != repo]
        test = [r for r in records if r["repo"] == repo]
        model = fit_fold(train, features, args.silence, args.l2, not args.review_model)
        m = simulate(model, test, model.floor)
        print(f"held-out {repo:<36} floor {model.floor:.3f}  {m}")
        held.extend(test)
        for key in ("hit_rate", "recall@5", "mrr"):
            pooled[key] = pooled.get(key, 0.0) + m[key] * m["positives"]
        pooled["silence_rate"] = pooled.get("silence_rate", 0.0) + m["silence_rate"] * m["negatives"]
        pooled["positives"] = pooled.get("positives", 0) + m["positives"]
        pooled["negatives"] = pooled.get("negatives", 0) + m["negatives"]
    for key in ("hit_rate", "recall@5", "mrr"):
        pooled[key] = round(pooled[key] / max(pooled["positives"], 1), 4)
    pooled["silence_rate"] = round(pooled["silence_rate"] / max(pooled["negatives"], 1), 4)
    print(f"held-out, pooled (leave-one-repository-out): {pooled}")
    if args.write:
        model = fit_fold(records, features, args.silence, args.l2, not args.review_model)
        m = simulate(model, records, model.floor)
        what = (
            "the review's evidence model (app/adr_review/core/evidence_model.py), not refitted"
            if args.review_model
            else f"fitted on them, features {', '.join(features)}"
        )
        rule = (
            f"for a silence >= {args.silence} on their negatives"
            if args.silence
            else "where the lower of hit rate and silence is highest"
        )
        note = model_note(
            len(records),
            repos,
            what,
            args.order,
            model.floor,
            rule,
            m,
            args.drawn,
            shipped_set(),
            args.exclude,
        )
        write_model(
            model,
            ROOT / "app" / "adr_review" / "core" / "guard_model.py",
            note,
            name="GUARD_EVIDENCE",
            what="The guard's evidence model",
            script="benchmarks/calibrate_guard.py",
        )
        print(f"in-sample (shipped model, floor {model.floor}): {m}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
