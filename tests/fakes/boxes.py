"""What GitHub does to a comment's Markdown when someone clicks a task-list box: `[ ]` becomes `[x]` on
that line. Written independently of app/adr_review/core/feedback.py, so the tests do not check the code with itself."""

from __future__ import annotations


def click_box(body: str, finding_id: str) -> str:
    """`body` with the box of the line that carries `finding_id`'s tag ticked."""
    tag = f"<!-- adr-review:finding={finding_id} -->"
    lines = body.split("\n")
    hits = [i for i, line in enumerate(lines) if line.rstrip().endswith(tag)]
    assert len(hits) == 1, f"no single box for {finding_id}"
    lines[hits[0]] = lines[hits[0]].replace("- [ ]", "- [x]", 1)
    return "\n".join(lines)
