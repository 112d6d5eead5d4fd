"""What identifies a finding across revisions of its ADR, as the comment's ledger carries it: data only
(app/adr_review/core/finding_identity.py makes and compares them; app/adr_review/core/feedback.py writes and reads them)."""

from __future__ import annotations

import re
from dataclasses import dataclass

SKETCH_K = 32  # token hashes kept per text (bottom-k): exact up to this many distinct content tokens
SKETCH_HEX = 4  # hex digits per token hash
_SIG_KEY = re.compile(r"[^\W_]{0,60}")  # a topic or section key (dedupe_findings' topic key, capped)
_SKETCH = re.compile(rf"(?:[0-9a-f]{{{SKETCH_HEX}}}){{0,{SKETCH_K}}}")


@dataclass(frozen=True)
class Signature:
    """What identifies a finding across revisions, without its text (app/adr_review/core/finding_identity.py makes
    and compares them): its topic key, its section's, and bottom-k sketches of the content tokens of its
    quote and of its title + gap (sorted 16-bit hashes, in hex)."""

    topic: str
    section: str
    quote: tuple[str, ...]
    says: tuple[str, ...]

    def to_list(self) -> list[str]:
        return [self.topic, self.section, "".join(self.quote), "".join(self.says)]

    @classmethod
    def from_list(cls, raw: object) -> Signature | None:
        """A ledger entry read back defensively (people with write access can edit the ledger)."""
        if not isinstance(raw, list) or len(raw) != 4 or not all(isinstance(v, str) for v in raw):
            return None
        topic, section, quote, says = raw
        if not all(_SIG_KEY.fullmatch(v) and v == v.casefold() for v in (topic, section)):
            return None
        if not (_SKETCH.fullmatch(quote) and _SKETCH.fullmatch(says)):
            return None
        return cls(topic, section, _split(quote), _split(says))


def _split(sketch: str) -> tuple[str, ...]:
    return tuple(sketch[i : i + SKETCH_HEX] for i in range(0, len(sketch), SKETCH_HEX))


__all__ = ["SKETCH_HEX", "SKETCH_K", "Signature"]
