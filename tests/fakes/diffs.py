"""The unified diff GitHub renders for a pull request (`Accept: application/vnd.github.diff`), made
from the fakes' base and head trees: `diff --git` headers, `---` / `+++` lines, hunks with context."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

DIFF_MEDIA_TYPE = "application/vnd.github.diff"


def pull_diff(paths: Iterable[str], base: Mapping[str, str], head: Mapping[str, str]) -> str:
    out: list[str] = []
    for path in paths:
        old, new = base.get(path), head.get(path)
        if old == new:
            continue
        out.append(f"diff --git a/{path} b/{path}\n")
        if old is None:
            out.append("new file mode 100644\n")
        elif new is None:
            out.append("deleted file mode 100644\n")
        a = f"a/{path}" if old is not None else "/dev/null"
        b = f"b/{path}" if new is not None else "/dev/null"
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True), a, b, n=3
        )
        out += [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]
    return "".join(out)
