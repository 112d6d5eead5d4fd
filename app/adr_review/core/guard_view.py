"""What templates/guard.md.j2 prints: the guard's decisions with every untrusted string wrapped. Pure.

ADR text (id, title, path, the decision sentence) and diff text (paths, lines) are untrusted: each is
an `Untrusted` value here, so the template must pass it through a sanitising filter
(app/adr_review/core/markdown_safe.py) or rendering fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adr_review.core.guard import Implicated
from adr_review.core.markdown_safe import untrusted


def guard_view(decisions: Sequence[Implicated], cut: Sequence[str], floor: float) -> dict[str, Any]:
    return {
        "floor": f"{floor:.3f}",
        "cut": list(cut),
        "decisions": [
            {
                "id": untrusted(d.adr.adr_id),
                "title": untrusted(d.adr.title),
                "path": untrusted(d.adr.path),
                "status": d.adr.status,
                "evidence": f"{d.probability:.2f}",
                "via": untrusted(d.via.adr_id) if d.via is not None else None,
                "section": untrusted(d.section) if d.section else None,
                "decision": untrusted(d.decision),
                "lines": [
                    {
                        "sign": "+" if e.change == "added" else "−",
                        "path": untrusted(e.path),
                        "number": e.number,
                        "text": untrusted(e.text),
                    }
                    for e in d.lines
                ],
            }
            for d in decisions
        ],
    }
