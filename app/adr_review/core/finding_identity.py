"""One finding counts once (issue 24): a finding raised again on a revision of the ADR, in other words,
is the same finding, so it keeps its id and with it its Adopted box, its dismissal and its single row in
the report. Pure.

A new review's findings get fresh ids (app/adr_review/core/feedback_boxes.py `finding_id`: the path, the topic and the
quote, so a reworded finding gets another). The comment's ledger keeps a `Signature` of each finding it
has shown; a new finding takes the id of a known one when it is the same finding (`match_strength`):

1. **the same topic**: its `dedupe_group`, normalised, is the known one's. It is the critics' and the
   Judge's own identity key; within one review `dedupe_findings` already merges on it.
2. **the same thing said in other words**: what the two say (title + gap) is at least SAME_SIMILARITY
   alike, wherever they quote (the revision may have rewritten the quoted passage).

The verified quote's place (its section, and quotes that overlap by QUOTE_OVERLAP: the same sentence,
quoted longer or shorter) ranks the candidates but never makes a match on its own: two different risks
are often raised about the same Decision sentence, and a tick carried to the wrong finding is worse than
a finding counted twice.

"Alike" is the overlap coefficient |A ∩ B| / min(|A|, |B|) of content tokens (app/adr_review/core/findings.py
`content_tokens` over app/adr_review/core/text.py's tokeniser: words, CJK bigrams without the hiragana ones, no
function words), with words of Latin script cut to their first STEM_CHARS letters ("consumers" and
"consumer", "migrated" and "migrate" agree). A rewording adds and drops words, so the share of the
shorter text found in the other separates rewordings from other findings better than Jaccard: on the
hand-written pairs of tests/core/test_finding_identity.py (`PAIRS`: 9 rewordings and 9 different
findings of one ADR, English and Japanese) rewordings score 0.42-0.77 and different findings 0.00-0.35
(Jaccard of the same tokens: 0.17-0.53 against 0.00-0.20, which overlap). SAME_SIMILARITY = 0.4 lies between; these
pairs were written by hand, never taken from a real model's rewordings.

A token set travels as a bottom-k sketch (the SKETCH_K smallest 16-bit token hashes; exact up to that
many distinct tokens), small enough for the ledger and free of the ADR's text. Matching is one to one,
strongest first: two findings of one review never share an id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from adr_review.core.feedback import read_ledger
from adr_review.core.feedback_boxes import finding_ids
from adr_review.core.finding_signature import SKETCH_HEX, SKETCH_K, Signature
from adr_review.core.findings import _key as topic_key
from adr_review.core.findings import content_tokens
from adr_review.core.results import Finding

SAME_SIMILARITY = 0.4  # what they say, alone: a reworded finding
QUOTE_OVERLAP = 0.8  # share of the shorter quote's tokens inside the other: the same passage
STEM_CHARS = 5  # a Latin-script word counts by its first letters (a crude stemmer, both languages safe)
_KEY_CAP = 60


def _key(text: str) -> str:
    """dedupe_findings' topic key (NFKC, case and separators folded: "Kafka ops-burden" and
    "kafka_ops burden" agree), capped for the ledger."""
    return topic_key(text)[:_KEY_CAP]


def _stem(token: str) -> str:
    return token[:STEM_CHARS] if token.isascii() and token.isalpha() else token


def sketch(text: str) -> tuple[str, ...]:
    """The SKETCH_K smallest 16-bit hashes of the text's (stemmed) content tokens, sorted."""
    tokens = {_stem(t) for t in content_tokens(text)}
    hashes = {hashlib.sha256(t.encode()).hexdigest()[:SKETCH_HEX] for t in tokens}
    return tuple(sorted(hashes)[:SKETCH_K])


def signature(finding: Finding) -> Signature:
    return Signature(
        topic=_key(finding.dedupe_group),
        section=_key(finding.section),
        quote=sketch(finding.quote),
        says=sketch(f"{finding.title}\n{finding.gap}"),
    )


def alike(a: Sequence[str], b: Sequence[str]) -> float:
    """The overlap coefficient of two token sets, from their sketches: counted over the SKETCH_K
    smallest hashes of their union, where both sketches are complete (exact for small sets)."""
    sa, sb = set(a), set(b)
    union = set(sorted(sa | sb)[:SKETCH_K])
    na, nb = len(union & sa), len(union & sb)
    if not na or not nb:
        return 0.0
    return len(union & sa & sb) / min(na, nb)


def match_strength(new: Signature, known: Signature) -> tuple[int, bool, float] | None:
    """(rule, same place, similarity) when `new` is the same finding as `known` (rule 2: the same
    topic, 1: alike in words), else None; a larger tuple is a stronger match. See the module doc."""
    says = alike(new.says, known.says)
    place = new.section == known.section and alike(new.quote, known.quote) >= QUOTE_OVERLAP
    if new.topic and new.topic == known.topic:
        return (2, place, says)
    if says >= SAME_SIMILARITY:
        return (1, place, says)
    return None


def same_finding(new: Signature, known: Signature) -> bool:
    return match_strength(new, known) is not None


def match_known(new: Sequence[tuple[str, Signature]], known: Mapping[str, Signature]) -> dict[str, str]:
    """fresh id -> known id, one to one, the strongest pairs first (a finding already shown under its
    own id keeps it). A fresh id that is itself known is a finding shown before unchanged."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for fid, _ in new:
        if fid in known:
            out[fid] = fid
            taken.add(fid)
    pairs = []
    for i, (fid, sig) in enumerate(new):
        if fid in out:
            continue
        for kid, ksig in known.items():
            if kid in taken:
                continue
            strength = match_strength(sig, ksig)
            if strength is not None:
                pairs.append((strength, -i, kid, fid))
    for _strength, _order, kid, fid in sorted(pairs, reverse=True):
        if fid not in out and kid not in taken:
            out[fid] = kid
            taken.add(kid)
    return out


def shown_ids(adr_path: str, findings: Sequence[Finding], previous: str | None) -> dict[str, str]:
    """Each finding's fresh id -> the id it is shown under: a finding the previous comment's ledger
    knows (the same finding, maybe in other words, on any revision of the ADR in this PR) keeps the
    known id, so its box, its tick and its dismissal stay its own (app/adr_review/core/finding_identity.py)."""
    fresh = finding_ids(adr_path, findings)
    ledger = read_ledger(previous) if previous else None
    known = ledger.signatures() if ledger else {}
    kept = match_known(list(zip(fresh, map(signature, findings), strict=True)), known)
    return {fid: kept.get(fid, fid) for fid in fresh}


__all__ = [
    "QUOTE_OVERLAP",
    "SAME_SIMILARITY",
    "STEM_CHARS",
    "match_known",
    "match_strength",
    "alike",
    "same_finding",
    "shown_ids",
    "signature",
    "sketch",
]
