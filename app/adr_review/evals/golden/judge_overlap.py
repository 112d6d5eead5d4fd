"""What UNSURE_SUBJECT_OVERLAP (app/adr_review/core/finding_checks.py) was chosen on: the Judge's golden cases.

Each recorded exclusion is scored against the critic finding it excludes (`held`: these must pass), and
the same covering passage against the case's findings on other topics (`off_subject`: not merged with
it by the recorded answer, another `dedupe_group`; these must not). The findings are read from the
Judge request production renders for the case, so their ids, quotes and gaps are the ones the code
checks. `python -m adr_review.evals.golden.judge_overlap` prints the table and the counts per threshold.
That no overlap can accept a claim on its own was measured on many more pairs, from the corpora:
benchmarks/judge_band.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adr_review.core.adr import Adr
from adr_review.core.finding_checks import UNSURE_SUBJECT_OVERLAP, subject_overlap
from adr_review.core.results import Finding
from adr_review.evals.golden.cases import golden_dir, load_cases, load_recording
from adr_review.evals.golden.suite_blindspot import BlindSpotSuite
from adr_review.pipeline.adr.blindspot import JUDGE_PROMPT
from adr_review.prompts import PROMPTS_DIR, PromptFiles

_FINDINGS = re.compile(r"<critic_findings>\s*(.*?)\s*</critic_findings>", re.DOTALL)


@dataclass(frozen=True)
class Pair:
    case: str
    passage_of: str  # the critic finding id the recorded answer excludes with this passage
    finding: str  # the critic finding id it is scored against
    overlap: float


@dataclass(frozen=True)
class JudgeCase:
    """One Judge golden case with a recording: the critic findings production renders for it, by id."""

    case: str
    adr: Adr
    library_path: str  # the case's `input.adr` (corpora/<collection>/.../<file> or seeds/<file>)
    items: Mapping[str, Mapping[str, Any]]  # critic finding id -> the rendered finding
    answer: Mapping[str, Any]  # the recorded Judge answer


def judge_cases(prompts_dir: Path = PROMPTS_DIR) -> list[JudgeCase]:
    """Every Judge golden case with a recording, its findings read from the Judge request production
    renders for it, so their ids, quotes and gaps are the ones the code checks."""
    prompt = PromptFiles(prompts_dir).prompt(JUDGE_PROMPT)
    suite = BlindSpotSuite(JUDGE_PROMPT)
    folder = golden_dir(prompt)
    cases, _errors = load_cases(folder)
    out: list[JudgeCase] = []
    for case in cases:
        recording = load_recording(folder, case.id)
        m = _FINDINGS.search(suite.request(case, prompt).user)
        inp, adr, _fixed = suite._inputs(case, prompt)
        if recording is None or m is None:
            continue
        items = {it["id"]: it for it in json.loads(m.group(1))}
        answer = recording.data if isinstance(recording.data, dict) else {}
        out.append(JudgeCase(case.id, adr, inp.adr, items, answer))
    return out


def exclusion_pairs(prompts_dir: Path = PROMPTS_DIR) -> tuple[list[Pair], list[Pair]]:
    """(held, off_subject) pairs over every Judge golden case with a recording (see the module doc)."""
    held: list[Pair] = []
    off: list[Pair] = []
    for jc in judge_cases(prompts_dir):
        items, answer, title = jc.items, jc.answer, jc.adr.title
        together = {
            i: tuple(jf.get("merged_ids") or ())
            for jf in answer.get("findings", [])
            for i in jf.get("merged_ids") or ()
        }
        for x in answer.get("excluded", []):
            target = items.get(x["id"])
            if target is None:
                continue
            held.append(
                Pair(jc.case, x["id"], x["id"], subject_overlap(x["quote"], as_finding(target), title))
            )
            for fid, it in items.items():
                related = fid == x["id"] or fid in together.get(x["id"], ())
                if related or (
                    it.get("dedupe_group") and it.get("dedupe_group") == target.get("dedupe_group")
                ):
                    continue
                off.append(Pair(jc.case, x["id"], fid, subject_overlap(x["quote"], as_finding(it), title)))
    return held, off


def as_finding(item: Mapping[str, Any]) -> Finding:
    """A rendered critic finding as the Finding the exclusion check scores."""
    return Finding(
        source=(),
        title=str(item.get("title", "")),
        severity="medium",
        actionability="monitor",
        quote=str(item.get("quote", "")),
        section="",
        gap=str(item.get("gap", "")),
        suggested_action="",
        dedupe_group="",
    )


def report(held: Sequence[Pair], off: Sequence[Pair]) -> str:
    lines = [f"held (recorded exclusions): {len(held)}, min overlap {min(p.overlap for p in held):.3f}"]
    lines += [f"  {p.overlap:.3f} {p.case} {p.passage_of}" for p in sorted(held, key=lambda p: p.overlap)]
    lines.append(f"off-subject (same passage, other findings): {len(off)}")
    top = sorted(off, key=lambda p: -p.overlap)[:5]
    lines += [f"  {p.overlap:.3f} {p.case} {p.passage_of} vs {p.finding}" for p in top]
    for t in (0.15, UNSURE_SUBJECT_OVERLAP, 0.25, 0.3, 0.35, 0.4, 0.5):
        kept = sum(p.overlap >= t for p in held)
        leaked = sum(p.overlap >= t for p in off)
        mark = "  <- UNSURE_SUBJECT_OVERLAP (below: rejected, no call)" if t == UNSURE_SUBJECT_OVERLAP else ""
        lines.append(
            f"threshold {t:.2f}: held {kept}/{len(held)}, off-subject at or above {leaked}/{len(off)}{mark}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(*exclusion_pairs()))
