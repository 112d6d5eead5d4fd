"""Writes the negative golden cases of dismissed findings (app/adr_review/evals/golden/dismissed.py) into a prompts
folder, and copies each case's ADR from a checkout into the golden library (docs/feedback.md).

Nothing is overwritten: a case file that exists is kept (a maintainer may have refined its phrases),
and so is a library ADR (the case was written against it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

import yaml

from adr_review.core.outcomes import FindingOutcome
from adr_review.evals.golden.cases import CASE_SUFFIX, LIBRARY_DIR
from adr_review.evals.golden.dismissed import negative_case


def export_dismissed(
    findings: Iterable[FindingOutcome],
    prompts_dir: Path,
    adr_dir: Path | None,
    note: Callable[[str], None],
    *,
    today: str | None = None,
) -> int:
    """0 when every case has its ADR in the library; 1 when some ADR files are still to be copied."""
    today = today or datetime.now(UTC).strftime("%Y-%m-%d")
    library = prompts_dir / LIBRARY_DIR / "adrs"
    written = kept = 0
    missing: dict[str, str] = {}  # library path -> where the ADR is in its repository
    prompts: set[str] = set()
    for f in findings:
        case = negative_case(f, today)
        if case is None:
            continue
        folder = prompts_dir / case.prompt / "golden"
        path = folder / f"{case.case_id}{CASE_SUFFIX}"
        if path.exists():
            kept += 1
        else:
            folder.mkdir(parents=True, exist_ok=True)
            text = yaml.safe_dump(case.data, allow_unicode=True, sort_keys=False, width=110)
            path.write_text(text, encoding="utf-8")
            written += 1
            prompts.add(case.prompt)
        target = library / case.library_path
        if target.exists():
            continue
        source = _in_checkout(adr_dir, f.path) if adr_dir is not None else None
        if source is None:
            missing[case.library_path] = f"{f.repo}:{f.path}"
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
    note(f"negative golden cases: {written} written, {kept} already there (kept) under {prompts_dir}")
    for lib, origin in sorted(missing.items()):
        note(f"copy the ADR {origin} to {library / lib} (or re-run with --adr-dir CHECKOUT)")
    if prompts:
        names = " ".join(f"--prompt {p}" for p in sorted(prompts))
        note(
            "each new case needs a recording: adr-review eval prompts "
            f"{names} --live --record (docs/golden-eval.md)"
        )
    return 1 if missing else 0


def _in_checkout(root: Path, path: str) -> Path | None:
    """The ADR file at its repository path inside the checkout; None if absent or outside it."""
    base = root.resolve()
    candidate = (base / path).resolve()
    if base not in candidate.parents or not candidate.is_file():
        return None
    return candidate
