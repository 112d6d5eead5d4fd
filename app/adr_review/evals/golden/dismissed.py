"""Dismissed findings -> negative golden cases (issue 17, "learn from it").

A reviewer who dismisses a finding with a reason (`/adr-review dismiss <id> <reason>`) says the prompt
should not have raised it for that ADR. `adr-review report --export-dismissed PROMPTS_DIR` writes one
case per such finding for the critic that raised it: the ADR as input, and the finding as a
`must_not_find` expectation (the blind-spot suite's existing "must not raise": it matches a finding's
title, or its topic key). The case's `origin` records where it came from: repository, PR, ADR path,
finding id, who dismissed it and why.

The store keeps no ADR text, so the ADR file is copied from a checkout (`--adr-dir`) into the golden
library, `prompts/_golden/adrs/feedback/<owner>__<name>/<path>`; without one the case is written
anyway and the command lists the files to copy there. See docs/feedback.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from adr_review.core.outcomes import FindingOutcome

FEEDBACK_LIBRARY = "feedback"  # under prompts/_golden/adrs/
DA_PROMPT = "blindspot-devils-advocate"
# The critic name perspective_of (app/adr_review/core/feedback_boxes.py) puts first, -> its prompt. Anything else is a
# Devil's Advocate perspective (a constitution id).
CRITIC_PROMPTS = {
    "premortem": "blindspot-premortem",
    "adjacent_domain": "blindspot-adjacent-domain",
    "devils_advocate": DA_PROMPT,
}
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class NegativeCase:
    prompt: str  # the prompt folder the case belongs to
    case_id: str  # = its file name without .case.yaml
    library_path: str  # the ADR's path under prompts/_golden/adrs/
    data: dict[str, Any]  # the case file's content


def prompt_for(perspective: str) -> str:
    return CRITIC_PROMPTS.get(perspective.split("/", 1)[0], DA_PROMPT)


def library_path_for(repo: str, path: str) -> str:
    """Where the ADR goes in the golden library: one folder per repository, the ADR at its own path."""
    owner, _, name = repo.partition("/")
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join([FEEDBACK_LIBRARY, f"{_slug(owner)}__{_slug(name)}", *parts])


def _slug(text: str) -> str:
    return _SLUG.sub("-", text.casefold()).strip("-") or "x"


def negative_case(f: FindingOutcome, exported_on: str) -> NegativeCase | None:
    """The case of one dismissed finding with a reason; None for anything else (nothing to learn: a
    guard answer is not a blind-spot finding, and the guard's golden cases are its own, prompts/guard-check)."""
    if f.guard or not f.dismissed or not f.reason.strip():
        return None
    prompt = prompt_for(f.perspective)
    case_id = f"dismissed-{_slug(f.repo)}-{f.pr}-{_slug(f.finding_id)}"
    lib = library_path_for(f.repo, f.path)
    by = f.dismissed_by or "?"
    data: dict[str, Any] = {
        "id": case_id,
        "description": (
            f"Negative case from a dismissal: {by} dismissed this finding on {f.repo}#{f.pr} ({f.path}) "
            f"with the reason below; {prompt} must not raise it again for this ADR."
        ),
        "sources": [
            f"ADR: {f.repo} {f.path}, as reviewed in PR #{f.pr} (copied into the golden library at export)",
            f"dismissed: finding {f.finding_id} ({f.perspective}, {f.severity}) by {by}: {f.reason}",
            f"exported by `adr-review report --export-dismissed` on {exported_on}",
            f"licence: the licence of {f.repo}; check it before committing this case to another repository",
        ],
        "origin": {
            "repo": f.repo,
            "pr": f.pr,
            "path": f.path,
            "finding_id": f.finding_id,
            "perspective": f.perspective,
            "severity": f.severity,
            "title": f.title,
            "dismissed_by": f.dismissed_by,
            "reason": f.reason,
        },
        "input": {"adr": lib},
        "expect": {
            "must_not_find": [
                {
                    "label": f"dismissed by {by}: {f.reason.strip()[:200]}",
                    # The title as shown; shorten it to its key phrases (both languages) for a live model.
                    "any_of": [f.title],
                }
            ]
        },
    }
    if prompt == DA_PROMPT:
        data["input"]["seed"] = 0  # the perspective draw: pick a seed that draws the perspective
    return NegativeCase(prompt, case_id, lib, data)


__all__ = [
    "CRITIC_PROMPTS",
    "FEEDBACK_LIBRARY",
    "NegativeCase",
    "library_path_for",
    "negative_case",
    "prompt_for",
]
