"""What templates/guard.md.j2 prints: the guard's decisions with every untrusted string wrapped. Pure.

ADR text (id, title, path, the decision sentence), diff text (paths, lines) and the model's words (its
reason, the quotes it gave) are untrusted: each is an `Untrusted` value here, so the template must pass
it through a sanitising filter (app/adr_review/core/markdown_safe.py) or rendering fails.

With a model check (`check`), each decision carries its verified verdict, the decisions with one come
first (conflicts, then unclear, then consistent), the answers whose quotes did not verify are listed
apart, and a check that gave no usable answer says so (the decision stays as the offline guard listed it).
A shown conflict has an Adopted box under its answer's id (`answer_ids`); `answers_shown` is what the
comment's ledger lists of them (docs/guard.md, "Adopted boxes and `dismiss`").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from adr_review.core.feedback import Shown, guard_shown
from adr_review.core.feedback_boxes import checkbox, distinct_ids
from adr_review.core.guard import Evidence, Implicated, QueryLine
from adr_review.core.guard_check import GuardVerdict, answer_id
from adr_review.core.markdown_safe import untrusted

if TYPE_CHECKING:
    from adr_review.core.adr import Adr


def _line(e: Evidence | QueryLine) -> dict[str, Any]:
    if isinstance(e, QueryLine):
        change, number, text = e.change, e.line.number, e.line.text
    else:
        change, number, text = e.change, e.number, e.text
    return {"sign": "+" if change == "added" else "−", "path": untrusted(e.path), "number": number,
            "text": untrusted(text)}  # fmt: skip


def answer_ids(verdicts: Sequence[GuardVerdict]) -> tuple[str, ...]:
    """The ids of the answers shown together (`answer_id`, made distinct)."""
    return distinct_ids(answer_id(v) for v in verdicts)


def answers_shown(decisions: Sequence[Implicated], check: Any) -> tuple[Shown, ...]:
    """The shown answers of `check` (a GuardCheckResult, or None) as the guard comment's ledger lists
    them (app/adr_review/core/feedback.py guard_shown): under the ids their boxes carry."""
    if check is None:
        return ()
    by_path = {d.adr.path: d.adr for d in decisions}
    return tuple(
        guard_shown(fid, v.verdict, f"{a.adr_id}: {a.title}" if (a := by_path.get(v.path)) else v.path)
        for fid, v in zip(answer_ids(check.shown), check.shown, strict=True)
    )


def _verdict(v: GuardVerdict, fid: str, t: Mapping[str, str]) -> dict[str, Any]:
    return {
        "verdict": v.verdict,
        "label": t.get(f"guard_verdict_{v.verdict}", v.verdict),
        "adr_quote": untrusted(v.adr_quote) if v.adr_quote else None,
        "section": v.section,
        "line": _line(v.diff_line) if v.diff_line is not None else None,
        "reason": untrusted(v.reason),
        "confidence": f"{v.confidence:.2f}",
        "checkbox": checkbox(fid, t.get("guard_adopted_box", "Adopted").format(id=fid))
        if v.verdict == "conflicts"
        else None,
    }


def _claim(v: GuardVerdict, adr: Adr | None, t: Mapping[str, str]) -> dict[str, Any]:
    return {
        "id": untrusted(adr.adr_id if adr is not None else v.path),
        "verdict": v.verdict,
        "why": t.get(f"guard_unverified_{v.unverified}", str(v.unverified)),
        "adr_quote": untrusted(v.claimed_adr_quote),
        "diff_quote": untrusted(v.claimed_diff_quote),
    }


def guard_view(
    decisions: Sequence[Implicated],
    cut: Sequence[str],
    floor: float,
    check: Any = None,  # app/adr_review/pipeline/guard_check.GuardCheckResult (the core does not import it)
    t: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    t = t or {}
    shown: dict[str, GuardVerdict] = {v.path: v for v in check.shown} if check is not None else {}
    ids = dict(zip([v.path for v in check.shown], answer_ids(check.shown), strict=True)) if check else {}
    order = [v.path for v in check.shown] if check is not None else []
    ranked = sorted(decisions, key=lambda d: order.index(d.adr.path) if d.adr.path in shown else len(order))
    by_path = {d.adr.path: d.adr for d in decisions}
    failed = {f.path: f for f in check.failures} if check is not None else {}
    return {
        "boxes": any(v.verdict == "conflicts" for v in shown.values()),  # the feedback hint under them
        "floor": f"{floor:.3f}",
        "cut": list(cut),
        "checked": check is not None,
        "model": check.model if check is not None else "",
        "unverified": [_claim(v, by_path.get(v.path), t) for v in check.unverified]
        if check is not None
        else [],
        "failures": [
            {"id": untrusted(by_path[f.path].adr_id if f.path in by_path else f.path), "kind": f.kind}
            for f in failed.values()
        ],
        "decisions": [
            {
                "id": untrusted(d.adr.adr_id),
                "title": untrusted(d.adr.title),
                "path": untrusted(d.adr.path),
                "status": d.adr.status,
                "evidence": f"{d.probability:.2f}",
                "via": untrusted(d.via.adr_id) if d.via is not None else None,
                "named": d.named,
                "section": untrusted(d.section) if d.section else None,
                "decision": untrusted(d.decision),
                "lines": [_line(e) for e in d.lines],
                "check": _verdict(shown[d.adr.path], ids[d.adr.path], t) if d.adr.path in shown else None,
            }
            for d in ranked
        ],
    }
