"""The copied fixtures stay what their SOURCE.md says they are: unmodified copies, every one listed.

(The GitHub payloads are checked in tests/adapters/test_events.py, the golden inputs in
tests/evals/test_prompt_eval.py; the recorded hashes against shared/ in benchmarks/test_shared_corpora.py.)
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("group", ["seeds", "corpora"])
def test_every_copied_file_is_listed_and_unchanged(group: str) -> None:
    root = FIXTURES / group
    lines = (root / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    sums = {rel: digest for digest, rel in (line.split("  ", 1) for line in lines)}
    files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert files - {"SOURCE.md", "SHA256SUMS"} == set(sums)
    for rel, digest in sums.items():
        assert hashlib.sha256((root / rel).read_bytes()).hexdigest() == digest, rel
