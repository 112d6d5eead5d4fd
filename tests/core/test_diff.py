"""The unified-diff parser: files, sides and line numbers from git diff / git show / diff -u, and total
on any text (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adr_review.core.diff import DiffFile, parse_diff

GIT = """\
commit 0123456789abcdef
Author: A <a@example.com>

    Store orders in MongoDB

diff --git a/app/store.py b/app/store.py
index 1111111..2222222 100644
--- a/app/store.py
+++ b/app/store.py
@@ -1,3 +1,3 @@ def header():
-import psycopg
+from pymongo import MongoClient
 pass
--- not a header: a removed line
+++ not a header: an added line
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+first
+second
diff --git a/gone.go b/gone.go
deleted file mode 100644
--- a/gone.go
+++ /dev/null
@@ -1 +0,0 @@
-package gone
\\ No newline at end of file
diff --git a/logo.png b/logo.png
Binary files a/logo.png and b/logo.png differ
diff --git a/old/name.py b/new/name.py
similarity index 100%
rename from old/name.py
rename to new/name.py
"""


def _summary(
    files: tuple[DiffFile, ...],
) -> list[tuple[str, str, str, list[tuple[int, str]], list[tuple[int, str]], bool]]:
    return [
        (
            f.path,
            f.old_path,
            f.kind,
            [(ln.number, ln.text) for ln in f.added],
            [(ln.number, ln.text) for ln in f.removed],
            f.binary,
        )
        for f in files
    ]


def test_git_show_output_parses_file_by_file() -> None:
    assert _summary(parse_diff(GIT)) == [
        (
            "app/store.py",
            "app/store.py",
            "modified",
            [(1, "from pymongo import MongoClient"), (3, "++ not a header: an added line")],
            [(1, "import psycopg"), (3, "-- not a header: a removed line")],
            False,
        ),
        ("new.txt", "new.txt", "added", [(1, "first"), (2, "second")], [], False),
        ("gone.go", "gone.go", "deleted", [], [(1, "package gone")], False),
        ("logo.png", "logo.png", "modified", [], [], True),
        ("new/name.py", "old/name.py", "renamed", [], [], False),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("not a diff at all\njust prose\n", []),
        # diff -u without a git header
        ("--- a.txt\t2024-01-01\n+++ b.txt\t2024-01-02\n@@ -1 +1 @@\n-x\n+y\n", [("b.txt", ["y"], ["x"])]),
        # two plain files in a row
        (
            "--- a\n+++ a\n@@ -1 +1 @@\n-1\n+2\n--- b\n+++ b\n@@ -1 +1 @@\n-3\n+4\n",
            [("a", ["2"], ["1"]), ("b", ["4"], ["3"])],
        ),
        # a hunk whose header promises more lines than follow: the next header still starts a file
        (
            "diff --git a/a b/a\n@@ -1,9 +1,9 @@\n-x\ndiff --git a/b b/b\n@@ -1 +1 @@\n+y\n",
            [("a", [], ["x"]), ("b", ["y"], [])],
        ),
        # an empty context line (a blank line some tools write without its space)
        ("diff --git a/a b/a\n@@ -1,3 +1,3 @@\n-x\n+y\n\n z\n", [("a", ["y"], ["x"])]),
    ],
)
def test_table(text: str, expected: list[tuple[str, list[str], list[str]]]) -> None:
    files = parse_diff(text)
    assert [(f.path, [ln.text for ln in f.added], [ln.text for ln in f.removed]) for f in files] == expected


_DIFFY = st.sampled_from(
    ["diff --git a/x b/y", "--- a/x", "+++ b/x", "@@ -1,2 +1,3 @@", "@@ -0,0 +1 @@", "@@ -5 +5,0 @@",
     "+added", "-removed", " context", "", "\\ No newline", "Binary files a and b differ",
     "rename from a", "rename to b", "new file mode 100644", "deleted file mode 100644", "@@ -9999999999 +1 @@"]
)  # fmt: skip


@settings(max_examples=300, deadline=2000)
@given(st.lists(st.one_of(_DIFFY, st.text(max_size=40)), max_size=60))
def test_never_raises_and_every_line_comes_from_the_input(lines: list[str]) -> None:
    text = "\n".join(lines)
    files = parse_diff(text)
    source = text.splitlines()
    for f in files:
        assert f.path
        for ln in f.added:
            assert "+" + ln.text in source
        for ln in f.removed:
            assert "-" + ln.text in source
    assert sum(len(f.added) + len(f.removed) for f in files) <= len(source)


@settings(max_examples=50, deadline=5000)
@given(st.integers(min_value=1, max_value=400))
def test_work_grows_with_the_input_not_faster(n: int) -> None:
    # n files of two changed lines each: every one found, in order (one pass; no re-scan per file)
    block = "diff --git a/f{i} b/f{i}\n@@ -1 +1 @@\n-old {i}\n+new {i}\n"
    files = parse_diff("".join(block.format(i=i) for i in range(n)))
    assert [f.path for f in files] == [f"f{i}" for i in range(n)]
