"""Guard cases from a repository's history: which commits name an ADR, and how a case is rebuilt.

A case is a commit id and its parent (kept in the repo: benchmarks/guard_cases.json); everything
else is read back from a local clone or bare mirror when the benchmark runs, so no third-party diff
is stored here:

- the diff `parent..commit` without the ADR folder (the change a guard would see);
- the commit's title with every ADR reference masked (`mask`), as the PR title, and (with `--body`)
  the rest of its message, trailers left out and masked the same way, as the PR body (`message_body`);
- the ADR folder as it was at the parent (what the guard's pool is).

A positive names an ADR in its message ("ADR-038", "ADR 12", "per ADR0037", "MADR 055", or a path
into the ADR folder); its expected ADRs are the folder's files with that number (or path) at the
parent. A negative is a code commit of the same months that names none.
"""

from __future__ import annotations

import io
import posixpath
import re
import subprocess
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

# "ADR-038", "ADR 12", "ADR0037", "adr_5", "MADR 055", "MADR-055"; not "ADRs" alone, not "address".
ADR_REF = re.compile(r"(?i)\bm?adr[\s_-]?#?0*(\d{1,4})\b")
ADR_WORD = re.compile(r"(?i)\bm?adrs?\b")
# "0012-x.md", "adr-012-x.md", "2021-06-05_012-x.md" (hydra: a date, then the number)
_NUMBER = re.compile(r"^(?:\d{4}-\d{2}-\d{2}[-_])?(?:m?adr[-_]?)?0*(\d+)(?=[-_.])", re.IGNORECASE)


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    date: str  # YYYY-MM-DD (author date)
    title: str
    message: str
    files: tuple[str, ...]


def git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, timeout=600
    ).stdout


def commits(git_dir: Path) -> Iterator[Commit]:
    """Every non-merge commit with its changed files, newest first."""
    out = git(
        git_dir,
        "log",
        "--no-merges",
        "--no-renames",
        "--format=%x1e%H%x1f%P%x1f%ad%x1f%B%x1f",
        "--date=short",
        "--name-only",
    )
    for record in out.decode("utf-8", "replace").split("\x1e")[1:]:
        parts = record.split("\x1f")
        if len(parts) < 5:
            continue
        sha, parents, date, message, names = parts[:5]
        parent = parents.split()[0] if parents.split() else ""
        if not parent:
            continue
        title = message.strip().splitlines()[0] if message.strip() else ""
        files = tuple(n for n in names.strip().splitlines() if n)
        yield Commit(sha, parent, date, title, message, files)


def mask(text: str, folder: str) -> str:
    """The text with every ADR reference (a number, a path into the folder) masked."""
    out = re.sub(rf"\S*{re.escape(folder)}\S*", "", text) if folder else text
    out = ADR_REF.sub("", out)
    return re.sub(r"\s{2,}", " ", out).strip()


# "Signed-off-by: A <a@b>", "Co-authored-by: …": a trailer is about who, not what the change says
_TRAILER = re.compile(r"^[A-Za-z][A-Za-z-]*-by:\s", re.MULTILINE)


def message_body(body: str, folder: str) -> str:
    """A commit message's body (git's `%b`: after the subject's paragraph) without its `-by:` trailer
    lines, every ADR reference masked: what a squash-merged PR's description leaves in the commit,
    read as the PR body."""
    kept = [ln for ln in body.strip().splitlines() if not _TRAILER.match(ln)]
    return "\n".join(mask(ln, folder) for ln in kept).strip()


def referenced_numbers(message: str) -> set[int]:
    return {int(m.group(1)) for m in ADR_REF.finditer(message)}


def referenced_names(message: str, folder: str) -> set[str]:
    """File names linked inside `folder` ("docs/adr/0012-x.md" -> "0012-x.md")."""
    return {posixpath.basename(m.group(1)) for m in re.finditer(rf"{re.escape(folder)}/(\S+?\.md)", message)}


def adr_number(path: str) -> int | None:
    m = _NUMBER.match(posixpath.basename(path))
    return int(m.group(1)) if m else None


def folder_at(git_dir: Path, commit: str, candidates: Sequence[str]) -> str | None:
    """The first of `candidates` that holds Markdown files at `commit`."""
    for folder in candidates:
        names = git(git_dir, "ls-tree", "-r", "--name-only", commit, "--", folder).decode().split()
        if any(n.endswith(".md") for n in names):
            return folder
    return None


def adr_files_at(git_dir: Path, commit: str, folder: str) -> dict[str, bytes]:
    """The Markdown files under `folder` at `commit`, by path relative to the folder."""
    data = git(git_dir, "archive", "--format=tar", commit, folder)
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".md"):
                f = tar.extractfile(member)
                if f is not None:
                    out[posixpath.relpath(member.name, folder)] = f.read()
    return out


def diff_without(git_dir: Path, parent: str, commit: str, folder: str) -> str:
    """The unified diff parent..commit, without the ADR folder."""
    args = ["diff", "--no-color", "--no-ext-diff", "--no-renames", parent, commit, "--", "."]
    if folder:
        args.append(f":(exclude){folder}")
    return git(git_dir, *args).decode("utf-8", "replace")


def write_folder(files: dict[str, bytes], target: Path) -> None:
    """Make `target` hold exactly `files` (unchanged files keep their mtime: the index syncs fast)."""
    target.mkdir(parents=True, exist_ok=True)
    existing = {p.relative_to(target).as_posix() for p in target.rglob("*.md")}
    for rel in existing - set(files):
        (target / rel).unlink()
    for rel, content in files.items():
        path = target / rel
        if path.is_file() and path.read_bytes() == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
