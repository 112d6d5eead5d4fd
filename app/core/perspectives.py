"""Constitution perspectives for the Devil's Advocate, and their reproducible seeded draw. Pure.

The draw ranks perspectives by sha256(seed:id) and takes the first k. Unlike random.sample it does not
depend on the Python version or on the list's order, and adding a perspective to the constitution only
changes a past draw if the new one ranks into it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class ConstitutionError(ValueError):
    pass


@dataclass(frozen=True)
class Perspective:
    id: str
    name: str
    question: str
    name_ja: str = ""
    question_ja: str = ""

    def localized(self, language: str) -> tuple[str, str]:
        """(name, question) in the ADR's language, falling back to English."""
        if language == "ja" and self.name_ja and self.question_ja:
            return self.name_ja, self.question_ja
        return self.name, self.question


def parse_constitution(data: Any) -> tuple[Perspective, ...]:
    """`{perspectives: [{id, name, question, name_ja?, question_ja?}, ...]}` -> Perspectives.

    Rejects what would make a draw ambiguous or a prompt empty: duplicate ids, missing text.
    """
    items = data.get("perspectives") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise ConstitutionError("constitution: expected a non-empty 'perspectives' list")
    out: list[Perspective] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConstitutionError(f"constitution: perspective #{i} is not a mapping")
        fields = {
            k: str(item.get(k) or "").strip() for k in ("id", "name", "question", "name_ja", "question_ja")
        }
        missing = [k for k in ("id", "name", "question") if not fields[k]]
        if missing:
            raise ConstitutionError(f"constitution: perspective #{i} lacks {', '.join(missing)}")
        if fields["id"] in seen:
            raise ConstitutionError(f"constitution: duplicate perspective id {fields['id']!r}")
        seen.add(fields["id"])
        out.append(Perspective(**fields))
    return tuple(out)


def _rank(seed: int, perspective_id: str) -> bytes:
    return hashlib.sha256(f"{seed}:{perspective_id}".encode()).digest()


def draw_perspectives(perspectives: Sequence[Perspective], seed: int, k: int = 3) -> tuple[Perspective, ...]:
    """k distinct perspectives chosen by seed; the same seed and constitution give the same draw."""
    if k > len(perspectives):
        raise ConstitutionError(f"cannot draw {k} perspectives from {len(perspectives)}")
    return tuple(sorted(perspectives, key=lambda p: _rank(seed, p.id))[:k])
