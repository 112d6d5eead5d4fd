"""The guard's use case: a diff in, the accepted decisions it touches out (offline: no model).

    result = run_guard(diff_text, index, folder, title=..., body=...)

Parse the diff (app/adr_review/core/diff.py), build the budgeted query (app/adr_review/core/guard.py), search the index
over the enforced pool only, re-assess the head with the guard's own calibrated evidence model
(app/adr_review/core/guard_model.py; the review's model answers another question: "does this ADR relate to
that ADR"), and keep the decisions whose evidence passes its floor and whose quotes verify. Silence
(no decision) is the expected answer for most code changes and carries a reason.

With a model (`llm`, and the `prompts` to ask it with), each listed decision is then checked by one call
(app/adr_review/pipeline/code_guard/guard_check.py): `GuardResult.check` holds the verified verdicts. Without one
(the default) nothing is called and the result is the offline listing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from adr_review.core.adr import Adr
from adr_review.core.diff import DiffFile, parse_diff
from adr_review.core.evidence import GUARD_FEATURES, HEAD, Background, EvidenceModel
from adr_review.core.guard import (
    DEFAULT_IGNORE,
    GuardQuery,
    Implicated,
    build_query,
    enforced_pool,
    implicate,
    rerank,
)
from adr_review.core.guard_features import FOLDER_WIDE, guard_features
from adr_review.core.guard_model import GUARD_EVIDENCE
from adr_review.core.guard_named import named_in, named_in_diff
from adr_review.core.results import Candidate
from adr_review.pipeline.code_guard.guard_check import GuardCheckResult, check_decisions
from adr_review.pipeline.ports import AdrIndex, LlmPort, PromptLibrary, StageMemo, no_memo
from adr_review.pipeline.structured import StepOverrides

RETRIEVED = 4 * HEAD  # the index's candidates the guard re-ranks by its own evidence

SilentReason = Literal["empty_diff", "nothing_to_read", "no_enforced_adrs", "no_candidates", "below_floor"]


@dataclass(frozen=True)
class GuardResult:
    decisions: tuple[Implicated, ...]
    query: GuardQuery
    silent_reason: SilentReason | None
    candidates: tuple[Candidate, ...] = ()  # the head, re-ranked by the guard's evidence
    retrieved: tuple[Candidate, ...] = ()  # the index's ranking (RETRIEVED at most), as it came
    dropped: Mapping[str, int] = field(default_factory=dict)
    pool_size: int = 0
    floor: float = 0.0
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    check: GuardCheckResult | None = None  # the model's verified verdicts, when a model was given
    named: frozenset[str] = frozenset()  # enforced ADRs the title, body or added lines name (guard_named.py)


def adr_folder_files(files: Sequence[DiffFile], folder: Sequence[Adr]) -> frozenset[str]:
    """The diff's paths that are ADRs of the folder (the path ends with an ADR's folder-relative
    path): a change to a decision is the review's business, not the guard's."""
    paths = {a.path for a in folder}
    return frozenset(f.path for f in files if paths & {f.path, *_suffixes(f.path)})


def _suffixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[i:]) for i in range(1, len(parts))]


def _named_first(
    head: Sequence[Candidate], retrieved: Sequence[Candidate], named: frozenset[str], folder: Sequence[Adr]
) -> list[Candidate]:
    """The head with the ADRs the PR names first (their retrieved candidate when the index returned
    one, else an unscored one: the name, not the score, puts them there). The named ones stand in the
    ranking's order (the head's, then the rest of what the index returned, then the folder's): a
    changed index page names every ADR, and the comment shows the ones the change is most about."""
    if not named:
        return list(head)
    known = {c.adr.path: c for c in [*retrieved, *head]}  # the head's carry the guard's evidence
    place = {p: i for i, p in enumerate(dict.fromkeys(c.adr.path for c in [*head, *retrieved]))}
    first = sorted(
        (
            known.get(a.path) or Candidate(a, None, 0.0, 0.0, 0.0, False, "named in the pull request")
            for a in folder
            if a.path in named
        ),
        key=lambda c: place.get(c.adr.path, len(place)),  # stable: unretrieved ones in the folder's order
    )
    return first + [c for c in head if c.adr.path not in named]


def run_guard(
    diff_text: str,
    index: AdrIndex,
    folder: Sequence[Adr],
    *,
    title: str = "",
    body: str = "",
    model: EvidenceModel = GUARD_EVIDENCE,
    ignore: Sequence[str] = DEFAULT_IGNORE,
    llm: LlmPort | None = None,
    prompts: PromptLibrary | None = None,
    overrides: StepOverrides | None = None,
    memo: StageMemo = no_memo,
    keep: Callable[[str], bool] = lambda _path: True,
) -> GuardResult:
    """`keep`: the diff's paths the query may read (the repo config's `guard.paths`, outside the ADR
    globs); `ignore`: fnmatch patterns it never reads."""
    files = parse_diff(diff_text)
    own = adr_folder_files(files, folder)
    query = build_query([f for f in files if f.path not in own and keep(f.path)], title, body, ignore=ignore)
    pool, redirect = enforced_pool(folder)
    base = {"files": len(files), "adr_files_skipped": sorted(own), "ignored": list(query.ignored)}

    def silent(reason: SilentReason, **extra: Any) -> GuardResult:
        return GuardResult(
            (), query, reason, pool_size=len(pool), floor=model.floor, diagnostics=base | extra
        )

    if not files and not title.strip():
        return silent("empty_diff")
    if query.empty:
        return silent("nothing_to_read")
    if not pool:
        return silent("no_enforced_adrs")
    result = index.search(query.text, top_n=RETRIEVED, pool=pool)
    background = result.diagnostics.get("background")
    if not result.candidates or not isinstance(background, dict):
        return silent("no_candidates", retrieval=result.empty_reason)
    bg = Background(**background)
    # the guard's own features; the folder-wide ones read every ADR of the folder: only for a model
    # that weighs them (the shipped one weighs title_text alone: docs/benchmarks.md)
    features = (
        guard_features(result.candidates, bg, query, folder, wide=model.weighs(FOLDER_WIDE))
        if model.weighs(GUARD_FEATURES)
        else None
    )
    head = rerank(result.candidates, bg, model, features=features)
    added = [q.line.text for q in query.lines if q.change == "added"]
    names = (*named_in(query.title, query.body, folder), *named_in_diff(added, folder))
    named = frozenset(p for p in names if p in pool)
    decisions, dropped = implicate(
        _named_first(head, result.candidates, named, folder), model, query, folder, redirect, named=named
    )
    check = None
    if llm is not None and prompts is not None and decisions:
        pairs = [(d.adr, d.lines) for d in decisions]
        check = check_decisions(pairs, query, llm, prompts, title=title, overrides=overrides, memo=memo)
    return GuardResult(
        tuple(decisions),
        query,
        None if decisions else "below_floor",
        candidates=head,
        retrieved=result.candidates,
        dropped=dropped,
        pool_size=len(pool),
        floor=model.floor,
        diagnostics=base
        | {"embedding_failed": bool(result.diagnostics.get("embedding_failed")), "background": background},
        check=check,
        named=named,
    )
