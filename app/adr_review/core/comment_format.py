"""How the comment writes a skip reason, a count, a cost and a duration. Pure."""

from __future__ import annotations

import re


def split_reason(reason: str) -> tuple[str, str]:
    code, sep, detail = reason.partition(": ")
    if sep and re.fullmatch(r"[a-z_]+", code):
        return code, detail
    if re.fullmatch(r"[a-z_]+", reason):
        return reason, ""
    return "", reason


def fmt_int(n: int, lang: str) -> str:
    return f"{n:,}"


def fmt_cost(usd: float) -> str:
    return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"


def fmt_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"
