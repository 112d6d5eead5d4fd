"""One-line messages for what a user typed wrong: the entrypoints print these, never a traceback."""

from __future__ import annotations


def error_text(exc: BaseException) -> str:
    """`cannot read FILE: No such file or directory` for OS errors (not `[Errno 2] ...`); str() else."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read {exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)
