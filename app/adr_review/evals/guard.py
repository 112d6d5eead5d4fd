"""Score the guard on cases rebuilt from history (benchmarks/guard_cases.json, app/adr_review/evals/guard_history.py).

For every case: the ADR folder at the parent is written to a work folder (one per repository and
folder, rewritten case by case so the index syncs incrementally), the diff parent..commit without
the ADR folder and the masked title go through `run_guard`, exactly what `adr-review guard` runs.

- positives (a commit that names an ADR the guard enforces at the parent: accepted, or superseded
  by an accepted one): hit rate (an expected ADR listed), R@5 (share of the expected ADRs in the
  ranking's top 5) and MRR (first expected ADR within the ranking's top 10);
- negatives (code commits of the same months that name no ADR): silence rate (nothing listed);
- a BM25 baseline on the same pool and query: its R@5 and MRR, and the AUC of its top score between
  positives and negatives (does the score say *whether* a decision is touched?), beside the AUC of
  the guard's top evidence.

Positives whose ADR is proposed, rejected or deprecated at the parent are counted apart: the guard
must stay silent on them by rule. Every case's features are kept (`records`) so the guard's model
can be fitted on them (benchmarks/calibrate_guard.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adr_review.core.evidence import Background, EvidenceModel
from adr_review.core.guard import enforced_pool, matching_lines
from adr_review.core.guard_features import guard_features
from adr_review.evals.guard_history import adr_files_at, diff_without, git, mask, message_body, write_folder

K = 5
MRR_DEPTH = 10


@dataclass(frozen=True)
class Case:
    repo: str
    commit: str
    parent: str
    kind: str  # positive | negative
    folder: str
    expected: tuple[str, ...]


def load_cases(path: Path) -> list[Case]:
    data = json.loads(path.read_text())
    return [
        Case(c["repo"], c["commit"], c["parent"], c["kind"], c["folder"], tuple(c.get("expected", ())))
        for c in data["cases"]
    ]


def _rr(ranked: Sequence[str], expected: Iterable[str]) -> float:
    exp = set(expected)
    return next((1.0 / (i + 1) for i, p in enumerate(ranked[:MRR_DEPTH]) if p in exp), 0.0)


def _recall(ranked: Sequence[str], expected: Sequence[str]) -> float:
    return len(set(ranked[:K]) & set(expected)) / len(set(expected)) if expected else 0.0


def auc(pos: Sequence[float], neg: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties half (Mann-Whitney)."""
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def run_case(
    case: Case,
    git_dir: Path,
    work: Path,
    store: Path,
    config: Any,
    model: EvidenceModel,
    *,
    body: bool = False,
) -> dict[str, Any]:
    """One case through the guard; the record the report and the calibration read. `body`: the
    commit message's body (message_body) is passed as the PR body."""
    from adr_review.adapters.index_open import ensure_synced, open_index_for
    from adr_review.pipeline.code_guard.guard import run_guard

    folder_dir = work / case.repo.replace("/", "__") / case.folder.replace("/", "__")
    write_folder(adr_files_at(git_dir, case.parent, case.folder), folder_dir)
    index = open_index_for(folder_dir, store, None, config)
    synced = ensure_synced(index, folder_dir)
    adrs = synced.adrs
    title = git(git_dir, "log", "-1", "--format=%s", case.commit).decode("utf-8", "replace").strip()
    masked = mask(title, case.folder)
    raw_body = (
        git(git_dir, "log", "-1", "--format=%b", case.commit).decode("utf-8", "replace") if body else ""
    )
    pr_body = message_body(raw_body, case.folder)
    diff = diff_without(git_dir, case.parent, case.commit, case.folder)
    result = run_guard(diff, index, adrs, title=masked, body=pr_body, model=model)
    status = {a.path: a.status for a in adrs}
    pool, redirect = enforced_pool(adrs)
    enforced = tuple(p for p in case.expected if p in pool)
    # the BM25 baseline: the same query over the same pool, ranked by BM25 alone
    qs = index.score(result.query.text, pool=pool) if pool and not result.query.empty else None
    bm25_ranked = [s.adr.path for s in sorted(qs.scores, key=lambda s: (-s.bm25, s.adr.path))] if qs else []
    bm25_top = max((s.bm25 for s in qs.scores), default=0.0) if qs else 0.0
    bg = Background.of([s.bm25 for s in qs.scores], [s.dense for s in qs.scores]) if qs else Background(0)
    listed = [d.adr.path for d in result.decisions]
    by_path = {a.path: a for a in adrs}
    expected_shown = set(enforced) | {redirect[p] for p in enforced if p in redirect}
    return {
        "repo": case.repo,
        "commit": case.commit,
        "kind": case.kind,
        "expected": list(case.expected),
        "enforced": list(enforced),
        "expected_status": [status.get(p, "missing") for p in case.expected],
        "listed": listed,
        "hit": bool(expected_shown & set(listed)),
        "ranked": _ranked(result),
        "bm25_ranked": bm25_ranked[:MRR_DEPTH],
        "bm25_top": bm25_top,
        "bm25_top_z": (bm25_top - bg.bm25_mean) / bg.bm25_std if bg.bm25_std > 1e-12 else 0.0,
        "top_evidence": max((c.evidence or 0.0 for c in result.candidates), default=0.0),
        "silent_reason": result.silent_reason,
        "cut": list(result.query.cut),
        "dropped": dict(result.dropped),
        "query_chars": len(result.query.text),
        "body_chars": len(pr_body),
        "changed_lines": len(result.query.lines),
        # the enforced ADRs the change names (listed whatever their evidence when a line matches)
        "named": [
            {"path": p, "lines": bool(matching_lines(by_path[p], result.query.lines))}
            for p in (a.path for a in adrs if a.path in result.named)  # the folder's order
        ],
        "retrieved": [
            {
                "path": c.adr.path,
                "features": f,
                "lines": bool(matching_lines(c.adr, result.query.lines)),
            }
            for c, f in zip(
                result.retrieved,
                guard_features(result.retrieved, Background(**_bg(result)), result.query, adrs),
                strict=True,
            )
        ],
    }


def _ranked(result: Any) -> list[str]:
    """The guard's order: its re-ranked head, then the rest of what the index returned."""
    head = [c.adr.path for c in result.candidates]
    return head + [c.adr.path for c in result.retrieved if c.adr.path not in head]


def _bg(result: Any) -> Mapping[str, Any]:
    return result.diagnostics.get("background") or {"size": result.pool_size}


def summarise(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The report's figures over `records` (overall and per repository)."""

    def block(rs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        pos = [r for r in rs if r["kind"] == "positive" and r["enforced"]]
        not_enforced = [r for r in rs if r["kind"] == "positive" and not r["enforced"]]
        neg = [r for r in rs if r["kind"] == "negative"]
        n = max(len(pos), 1)
        return {
            "positives": len(pos),
            "positives_not_enforced": len(not_enforced),
            "negatives": len(neg),
            "hit_rate": round(sum(r["hit"] for r in pos) / n, 4),
            "recall@5": round(sum(_recall(r["ranked"], r["enforced"]) for r in pos) / n, 4),
            "mrr": round(sum(_rr(r["ranked"], r["enforced"]) for r in pos) / n, 4),
            "silence_rate": round(sum(not r["listed"] for r in neg) / max(len(neg), 1), 4),
            "silence_on_not_enforced": round(
                sum(not r["listed"] for r in not_enforced) / max(len(not_enforced), 1), 4
            ),
            "bm25": {
                "recall@5": round(sum(_recall(r["bm25_ranked"], r["enforced"]) for r in pos) / n, 4),
                "mrr": round(sum(_rr(r["bm25_ranked"], r["enforced"]) for r in pos) / n, 4),
                "auc_top_score": _round(auc([r["bm25_top"] for r in pos], [r["bm25_top"] for r in neg])),
                "auc_top_z": _round(auc([r["bm25_top_z"] for r in pos], [r["bm25_top_z"] for r in neg])),
            },
            "auc_top_evidence": _round(
                auc([r["top_evidence"] for r in pos], [r["top_evidence"] for r in neg])
            ),
            "budget_cut": sum(1 for r in rs if r["cut"]),
        }

    repos = sorted({str(r["repo"]) for r in records})
    return {
        "overall": block(records),
        "repos": {name: block([r for r in records if r["repo"] == name]) for name in repos},
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
