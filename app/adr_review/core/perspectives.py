"""Constitution perspectives for the Devil's Advocate, and their reproducible, relevance-weighted draw. Pure.

Each perspective carries terms (English and Japanese) that signal it matters to an ADR. Its weight is
the floor (1) plus how often its terms occur in the ADR (each term counted at most 3 times), so an ADR
about personal data makes `privacy` likelier while every perspective keeps a non-zero chance: a draw,
not a filter. The draw is weighted sampling without replacement (Efraimidis–Spirakis: keep the k
largest keys u^(1/w)), with u taken from sha256(seed:id) and the keys compared exactly in integers, so
it depends neither on the Python version, the platform's floating point nor the list's order. With
equal weights it is the plain ranking by sha256(seed:id), the draw before weights existed.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adr_review.core.text import tokenize

WEIGHT_FLOOR = 1  # every perspective's weight before its terms count: none is ever excluded
MAX_COUNT_PER_TERM = 3  # a term repeated all over one ADR must not outweigh several distinct ones
_U_BITS = 64  # bits of sha256(seed:id) used for u; ties (same 64 bits) fall back to the id


class ConstitutionError(ValueError):
    pass


@dataclass(frozen=True)
class Perspective:
    id: str
    name: str
    question: str
    name_ja: str = ""
    question_ja: str = ""
    # Words or phrases whose presence in an ADR makes this perspective more relevant, English and
    # Japanese alike (either may occur in either ADR); a trailing `*` matches any word ending.
    terms: tuple[str, ...] = ()

    def localized(self, language: str) -> tuple[str, str]:
        """(name, question) in the ADR's language, falling back to English."""
        if language == "ja" and self.name_ja and self.question_ja:
            return self.name_ja, self.question_ja
        return self.name, self.question


def parse_constitution(data: Any) -> tuple[Perspective, ...]:
    """`{perspectives: [{id, name, question, name_ja?, question_ja?, terms?, terms_ja?}, ...]}` ->
    Perspectives.

    Rejects what would make a draw ambiguous or a prompt empty: duplicate ids, missing text, terms that
    are not a list of strings.
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
        terms: list[str] = []
        for key in ("terms", "terms_ja"):
            value = item.get(key) or []
            if not isinstance(value, list) or not all(isinstance(t, str) and t.strip() for t in value):
                raise ConstitutionError(f"constitution: {fields['id']}.{key} must be a list of terms")
            terms.extend(t.strip() for t in value)
        out.append(Perspective(**fields, terms=tuple(dict.fromkeys(terms))))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _term_tokens(term: str) -> tuple[tuple[str, ...], bool]:
    """A term as the ADR's tokens (CJK as bigrams, like retrieval) and whether its last word is a prefix."""
    prefix = term.endswith("*")
    return tuple(tokenize(term.rstrip("*"))), prefix


def _occurrences(tokens: Sequence[str], positions: Mapping[str, list[int]], term: str) -> int:
    """How often the term's tokens occur in a row in the ADR's tokens (a prefix term: any ending)."""
    words, prefix = _term_tokens(term)
    if not words:
        return 0
    if prefix and len(words) == 1:
        return sum(len(at) for word, at in positions.items() if word.startswith(words[0]))
    n, count = len(words), 0
    for i in positions.get(words[0], ()):
        window = tokens[i : i + n]
        if len(window) == n and list(window[:-1]) == list(words[:-1]):
            last = window[-1]
            count += last == words[-1] or (prefix and last.startswith(words[-1]))
    return count


def perspective_weights(perspectives: Sequence[Perspective], text: str) -> dict[str, int]:
    """Each perspective's draw weight for this ADR text: WEIGHT_FLOOR + its terms' occurrences
    (each term capped at MAX_COUNT_PER_TERM). Integers, so the recorded weights are exactly the ones used."""
    tokens = tokenize(text)
    positions: dict[str, list[int]] = {}
    for i, tok in enumerate(tokens):
        positions.setdefault(tok, []).append(i)
    return {
        p.id: WEIGHT_FLOOR + sum(min(MAX_COUNT_PER_TERM, _occurrences(tokens, positions, t)) for t in p.terms)
        for p in perspectives
    }


def _u_numerator(seed: int, perspective_id: str) -> int:
    """u = (2m + 1) / 2^(bits+1) in (0, 1), m from sha256(seed:id): the smaller the hash, the larger u
    (so equal weights rank exactly like the unweighted draw did)."""
    digest = hashlib.sha256(f"{seed}:{perspective_id}".encode()).digest()
    m = (1 << _U_BITS) - 1 - int.from_bytes(digest[: _U_BITS // 8], "big")
    return 2 * m + 1


def draw_perspectives(
    perspectives: Sequence[Perspective],
    seed: int,
    k: int = 3,
    weights: Mapping[str, int] | None = None,
) -> tuple[Perspective, ...]:
    """k distinct perspectives drawn by seed, each with probability growing with its weight (missing or
    non-positive: WEIGHT_FLOOR). The same seed, constitution and weights give the same draw.

    Key comparison u_a^(1/w_a) > u_b^(1/w_b) is done as u_a^(w_b) > u_b^(w_a) on the integer numerators
    (the common denominator 2^(bits+1) moves to the other side), exactly, without floating point.
    """
    if k > len(perspectives):
        raise ConstitutionError(f"cannot draw {k} perspectives from {len(perspectives)}")
    given = weights or {}
    bits = _U_BITS + 1
    keyed = [
        (_u_numerator(seed, p.id), max(WEIGHT_FLOOR, int(given.get(p.id, WEIGHT_FLOOR))), p)
        for p in perspectives
    ]

    def larger_first(a: tuple[int, int, Perspective], b: tuple[int, int, Perspective]) -> int:
        (ua, wa, pa), (ub, wb, pb) = a, b
        left, right = ua**wb << (bits * wa), ub**wa << (bits * wb)
        if left != right:
            return -1 if left > right else 1
        return -1 if pa.id < pb.id else (1 if pa.id > pb.id else 0)

    ranked = sorted(keyed, key=functools.cmp_to_key(larger_first))
    return tuple(p for _, _, p in ranked[:k])
