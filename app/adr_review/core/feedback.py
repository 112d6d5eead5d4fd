"""What reviewers do with the findings (issue 17), read from and written into the comment itself. Pure.

Each shown finding has a stable id and a task-list checkbox, "adopted", in its ADR's comment
(app/adr_review/core/feedback_boxes.py); re-renders carry the ticks over (`carry_ticks`).

The comment also carries a hidden *ledger*, its last line, of what it has shown across the PR's
revisions of the ADR: per ADR content digest the findings shown and what that run cost. The Action
has no state that outlives a job on a PR, so the ledger is how its scheduled run learns, from the
comment alone, what was shown, what the ADR cost, and whether the ADR was revised after findings were
shown (the seed's sunset rule, ADR-0071). Both the Action and the App write it; the App also stores
every outcome as it happens. The ledger is read defensively: a person with write access can edit it.

The guard comment (issue 28) has the same boxes and ledger for the conflicts its model check shows
(`guard_shown`: the verdict where a finding has its severity, perspective GUARD_PERSPECTIVE); its
marker path sets its records apart in the store and the report (app/adr_review/core/outcomes.py).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from adr_review.core.feedback_boxes import ID_PATTERN, carry_ticks, perspective_of, read_ticks
from adr_review.core.finding_signature import Signature
from adr_review.core.markdown_safe import clean
from adr_review.core.results import Finding

_LEDGER_PREFIX = "<!-- adr-review:ledger v1 "
_LEDGER_MAX = 32_000  # characters of a ledger line read at most (one we write is under LEDGER_CAP)
MAX_REVISIONS = 12  # revisions kept in the ledger: the first, and the latest ones
_TITLE_CAP = 120
_RUNS_KEPT = 6  # run keys remembered per revision
_MONTHS_KEPT = 2
_MONTH = re.compile(r"\d{4}-\d{2}")
_RUN = re.compile(r"[0-9a-f]{12}")
_SEVERITIES = frozenset({"critical", "high", "medium", "low"})
_SLUG = re.compile(r"[a-z0-9_/-]{1,60}")
# A guard answer as its comment's ledger lists it (app/adr_review/core/guard_view.py answers_shown): the
# perspective GUARD_PERSPECTIVE and its verdict where a finding has its severity.
GUARD_PERSPECTIVE = "guard"
_VERDICT = re.compile(r"[a-z]{1,20}")  # not guard_check's list: the ledger reader stays as light as it was

# --------------------------------------------------------------------------------------------------
# The ledger


@dataclass(frozen=True)
class Shown:
    """One finding as shown: its id, severity and perspective, its title (for exports), and what
    identifies it on a later revision (app/adr_review/core/finding_identity.py)."""

    id: str
    severity: str
    perspective: str
    title: str = ""
    sig: Signature | None = None


@dataclass(frozen=True)
class Revision:
    """One reviewed content of the ADR (its sha256, 16 hex digits), what its latest review showed, and
    what its reviews cost (`runs`: the run keys counted, so re-publishing one run never counts twice)."""

    digest: str
    shown: tuple[Shown, ...]
    cost_usd: float = 0.0
    runs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ledger:
    revisions: tuple[Revision, ...] = ()
    dropped: int = 0  # middle revisions no longer listed (MAX_REVISIONS)
    # Findings adopted (ticked) while shown that the latest render no longer shows: a revision's new
    # review replaces the boxes, and the Action's scheduled run must still count them.
    adopted: tuple[str, ...] = ()
    # What its runs cost per UTC month ("2026-12", USD), the latest _MONTHS_KEPT: the Action's monthly
    # cap adds these up over the repository's comments (app/adr_review/pipeline/plans/budget.py).
    spend: tuple[tuple[str, float], ...] = ()

    def add(self, rev: Revision, month: str | None = None) -> Ledger:
        """A re-review of the same content replaces its entry (a re-run is not a revision); new content
        is appended. A run not counted before adds its cost to `month`'s spend."""
        revs = list(self.revisions)
        counted = True
        if revs and revs[-1].digest == rev.digest:
            last = revs[-1]
            new_runs = tuple(r for r in rev.runs if r not in last.runs)
            counted = bool(new_runs or not rev.runs)
            cost = last.cost_usd + (rev.cost_usd if counted else 0.0)
            revs[-1] = Revision(rev.digest, rev.shown, cost, (last.runs + new_runs)[-_RUNS_KEPT:])
        else:
            revs.append(rev)
        spend = dict(self.spend)
        if month is not None and counted and rev.cost_usd > 0:
            spend[month] = spend.get(month, 0.0) + rev.cost_usd
        dropped = self.dropped
        if len(revs) > MAX_REVISIONS:
            cut = len(revs) - MAX_REVISIONS
            revs = revs[:1] + revs[1 + cut :]
            dropped += cut
        return Ledger(tuple(revs), dropped, self.adopted, tuple(sorted(spend.items())[-_MONTHS_KEPT:]))

    def spent_in(self, month: str) -> float:
        return dict(self.spend).get(month, 0.0)

    @property
    def revised(self) -> bool:
        """The ADR changed in a later push after a review had shown it findings."""
        first_shown = next((i for i, r in enumerate(self.revisions) if r.shown), None)
        if first_shown is None:
            return False
        digest = self.revisions[first_shown].digest
        return self.dropped > 0 or any(r.digest != digest for r in self.revisions[first_shown + 1 :])

    @property
    def cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.revisions)

    def shown(self) -> dict[str, Shown]:
        """Every finding shown in any revision, by id (the latest showing wins)."""
        return {s.id: s for r in self.revisions for s in r.shown}

    def signatures(self) -> dict[str, Signature]:
        """What identifies each finding shown, by id (the latest known signature wins)."""
        return {s.id: s.sig for r in self.revisions for s in r.shown if s.sig is not None}


def shown_of(
    ids: Sequence[str], findings: Sequence[Finding], sigs: Sequence[Signature | None] | None = None
) -> tuple[Shown, ...]:
    """The findings as shown under `ids`, with what identifies each (app/adr_review/core/finding_identity.py)."""
    return tuple(
        Shown(fid, f.severity, perspective_of(f), clean(f.title)[:_TITLE_CAP], sig)
        for fid, f, sig in zip(ids, findings, sigs or [None] * len(findings), strict=True)
    )


def guard_shown(fid: str, verdict: str, title: str) -> Shown:
    """A guard answer as the guard comment's ledger lists it: its verdict where a finding has its
    severity, GUARD_PERSPECTIVE, and the ADR's id and title (app/adr_review/core/guard_view.py)."""
    return Shown(fid, verdict, GUARD_PERSPECTIVE, clean(title)[:_TITLE_CAP])


LEDGER_CAP = 3_500  # characters of the ledger line at most (render.py leaves room for it)


def ledger_line(ledger: Ledger) -> str:
    """The hidden line. JSON with <, > and & escaped, so no text in it can end the HTML comment. Kept
    under LEDGER_CAP: older revisions lose their titles first, then the signatures of findings the
    latest revision does not show, then the oldest middle revisions go, and last the signatures (the
    next revision's findings then get ids of their own)."""
    last = len(ledger.revisions) - 1
    line = _ledger_text(ledger, titles_from=0)
    if len(line) > LEDGER_CAP:
        line = _ledger_text(ledger, titles_from=last)
    if len(line) > LEDGER_CAP:
        line = _ledger_text(ledger, titles_from=last, sigs="latest")
    while len(line) > LEDGER_CAP and len(ledger.revisions) > 2:
        revs = ledger.revisions
        ledger = replace(ledger, revisions=revs[:1] + revs[2:], dropped=ledger.dropped + 1)
        line = _ledger_text(ledger, titles_from=len(ledger.revisions) - 1, sigs="latest")
    if len(line) > LEDGER_CAP:
        line = _ledger_text(ledger, titles_from=len(ledger.revisions) - 1, sigs="none")
    return line


def _ledger_text(ledger: Ledger, *, titles_from: int, sigs: Literal["all", "latest", "none"] = "all") -> str:
    known = ledger.signatures() if sigs != "none" else {}
    if sigs == "latest" and ledger.revisions:
        latest = {s.id for s in ledger.revisions[-1].shown}
        known = {fid: sig for fid, sig in known.items() if fid in latest}
    data = {
        "revs": [
            {
                "d": r.digest,
                "c": round(r.cost_usd, 6),
                "r": list(r.runs),
                "f": [
                    [s.id, s.severity, s.perspective, s.title if i >= titles_from else ""] for s in r.shown
                ],
            }
            for i, r in enumerate(ledger.revisions)
        ],
        "dropped": ledger.dropped,
        "adopted": list(ledger.adopted),
        "k": {fid: sig.to_list() for fid, sig in known.items()},
        "s": {month: round(usd, 6) for month, usd in ledger.spend},
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"{_LEDGER_PREFIX}{text} -->"


def read_ledger(body: str) -> Ledger | None:
    """The ledger of a comment body, or None when it has none or it does not read as one."""
    for line in reversed(body.rstrip().split("\n")[-3:]):
        s = line.strip()
        if s.startswith(_LEDGER_PREFIX) and s.endswith("-->") and len(s) <= _LEDGER_MAX:
            try:
                return _ledger(json.loads(s[len(_LEDGER_PREFIX) : -3]))
            except (ValueError, TypeError, KeyError, IndexError):
                return None
    return None


def _ledger(data: Mapping[str, object]) -> Ledger | None:
    revs = []
    raw = data["revs"]
    if not isinstance(raw, list):
        return None
    raw_sigs = data.get("k", {})  # absent in ledgers written before findings kept their ids
    sigs = raw_sigs if isinstance(raw_sigs, dict) else {}
    for r in raw[: MAX_REVISIONS * 2]:
        digest = str(r["d"])
        if not re.fullmatch(r"[0-9a-f]{16}", digest):
            return None
        shown = []
        for item in r["f"][:50]:
            fid, sev, persp, title = (str(v) for v in item[:4])
            if ID_PATTERN.fullmatch(fid) and _kind_ok(sev, persp):
                sig = Signature.from_list(sigs.get(fid))
                shown.append(Shown(fid, sev, persp, clean(title)[:_TITLE_CAP], sig))
        runs = tuple(str(x) for x in r.get("r", [])[:_RUNS_KEPT] if _RUN.fullmatch(str(x)))
        revs.append(Revision(digest, tuple(shown), max(0.0, float(r["c"])), runs))
    dropped = data.get("dropped", 0)
    adopted = data.get("adopted", [])
    raw_spend = data.get("s", {})  # absent in ledgers written before the monthly spend
    spend = {
        str(m): float(u)
        for m, u in (raw_spend.items() if isinstance(raw_spend, dict) else ())
        if _MONTH.fullmatch(str(m)) and isinstance(u, int | float) and 0 <= u < 1e9
    }
    return Ledger(
        tuple(revs),
        int(dropped) if isinstance(dropped, int) and dropped >= 0 else 0,
        tuple(str(a) for a in adopted[:200] if ID_PATTERN.fullmatch(str(a)))
        if isinstance(adopted, list)
        else (),
        tuple(sorted(spend.items())[-_MONTHS_KEPT:]),
    )


def _kind_ok(severity: str, perspective: str) -> bool:
    if perspective == GUARD_PERSPECTIVE:  # its verdict (app/adr_review/core/guard_check.py VERDICTS)
        return bool(_VERDICT.fullmatch(severity))
    return severity in _SEVERITIES and bool(_SLUG.fullmatch(perspective))


def without_ledger(body: str) -> str:
    lines = body.rstrip("\n").split("\n")
    if lines and lines[-1].strip().startswith(_LEDGER_PREFIX):
        return "\n".join(lines[:-1]).rstrip("\n")
    return body


def with_ledger(body: str, ledger: Ledger) -> str:
    return without_ledger(body).rstrip("\n") + "\n\n" + ledger_line(ledger) + "\n"


def content_digest(content_sha256: str) -> str:
    return content_sha256[:16]


@dataclass(frozen=True)
class CommentFeedback:
    """What one of our comments says reviewers did: the ledger and the boxes' state."""

    ledger: Ledger
    ticks: Mapping[str, bool]

    @property
    def adopted(self) -> frozenset[str]:
        """Ticked boxes, and what the ledger kept of adoptions no longer shown (a box wins)."""
        kept = {fid for fid in self.ledger.adopted if fid not in self.ticks}
        return frozenset(fid for fid, on in self.ticks.items() if on) | kept


def read_feedback(body: str) -> CommentFeedback:
    return CommentFeedback(read_ledger(body) or Ledger(), read_ticks(body))


def next_ledger(previous: str | None, rev: Revision, month: str | None = None) -> Ledger:
    """The ledger a new render carries: the previous comment's, with this review's revision added (its
    cost booked to `month`), and the adopted findings this render stops showing kept in `adopted`."""
    if not previous:
        return Ledger().add(rev, month)
    base = read_ledger(previous) or Ledger()
    shown_now = {s.id for s in rev.shown}
    adopted = sorted((set(base.adopted) | read_feedback(previous).adopted) - shown_now)
    return replace(base, adopted=tuple(adopted)).add(rev, month)


def adopted_before(previous: str | None) -> frozenset[str]:
    """What a re-render ticks: the boxes ticked in the previous comment, and the adopted findings it
    no longer showed (one may be shown again)."""
    if not previous:
        return frozenset()
    feedback = read_feedback(previous)
    return feedback.adopted | set(feedback.ledger.adopted)


def revision_of(
    content_sha256: str,
    ids: Sequence[str],
    findings: Sequence[Finding],
    sigs: Sequence[Signature | None],
    cost_usd: float,
    run_key: str,
    boxes: Iterable[str],
) -> Revision:
    """This review's revision: the findings (shown under `ids`, identified by `sigs`) whose boxes the
    body shows (a size-trimmed comment shows fewer), what it cost, and its run."""
    return revision(content_sha256, shown_of(ids, findings, sigs), cost_usd, run_key, boxes)


def revision(
    content_sha256: str, shown: Iterable[Shown], cost_usd: float, run_key: str, boxes: Iterable[str]
) -> Revision:
    """A comment's revision of what it shows: the items of `shown` whose boxes the body shows, what its
    run cost, and the run. `content_sha256`: what the comment is about (the ADR's content; the guard's
    key for the guard comment)."""
    keep = set(boxes)
    run = hashlib.sha256(run_key.encode()).hexdigest()[:12]
    return Revision(content_digest(content_sha256), tuple(s for s in shown if s.id in keep), cost_usd, (run,))


def stamped(body: str, rev: Revision, previous: str | None, month: str | None) -> str:
    """`body` as published: the boxes the previous comment had ticked ticked again (a re-render keeps
    them), and its ledger with `rev` added (its cost booked to `month`)."""
    return with_ledger(carry_ticks(body, adopted_before(previous)), next_ledger(previous, rev, month))
