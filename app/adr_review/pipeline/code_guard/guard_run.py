"""The guard of a plan (Plan.guard), written once: carry_out (app/adr_review/pipeline/plans/carry_out.py) runs it
in the Action and in the App's plan run alike.

  diff      the PR's diff from GitHub (GitHubPort.pull_diff); one GitHub refuses to render (too large:
            406 / 422) ends the guard with a note, never the run; a diff above MAX_DIFF_CHARS is read
            up to the last whole file before it, and the comment says what was left out
  key       the diff, the ADR folders at the base (their digest), the title and body, the settings
            (app/adr_review/pipeline/keys.py guard_key): our guard comment whose marker carries it is
            left alone, so a push that changes none of them writes nothing and calls nothing
  guard     app/adr_review/pipeline/code_guard/guard.py over each ADR folder at the base (the review's index); when
            the plan may call a model (Guard.online: a key, not read-only, the caps not reached), the
            decisions shown are checked by it (app/adr_review/pipeline/code_guard/guard_check.py), each answer memoised
  comment   one per PR (marker GUARD_MARKER_PATH, app/adr_review/core/comments.py), edited in place under
            the comment lock, only while the planned head is still the PR's head; silent: no comment,
            or our earlier one edited to say that no decision is implicated any more. It ends with the
            review comments' ledger (the answers shown with a box, app/adr_review/core/feedback.py), the
            previous comment's ticks carried over, and is recorded in the store like theirs, so ticks and
            `dismiss` reach its answers (app/adr_review/pipeline/reporting/feedback.py)
"""

from __future__ import annotations

import hashlib
import posixpath
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from adr_review.core.adr_paths import is_adr_candidate
from adr_review.core.comments import GUARD_MARKER_PATH
from adr_review.core.feedback import guard_shown, revision, stamped
from adr_review.core.feedback_boxes import read_ticks
from adr_review.core.guard import DEFAULT_IGNORE, MAX_SHOWN, ignored
from adr_review.core.guard_view import answers_shown
from adr_review.core.marker import marker
from adr_review.core.render import render_guard
from adr_review.core.triggers import ChangedFile, adr_glob_roots, matches_any, select_adrs
from adr_review.pipeline.code_guard.guard import run_guard
from adr_review.pipeline.code_guard.guard_check import check_decisions
from adr_review.pipeline.keys import folder_digest, guard_key
from adr_review.pipeline.locks import LockFactory
from adr_review.pipeline.plans.budget import month_of
from adr_review.pipeline.plans.folders import FolderCache
from adr_review.pipeline.plans.publish import comment_lock_name, record_quietly, write_comment
from adr_review.pipeline.plans.targets import Plan
from adr_review.pipeline.ports import GitHubError, GitHubPort, LlmPort, PromptLibrary, StageMemo
from adr_review.pipeline.state_ports import FeedbackLog


class PlanWork(Protocol):
    """What a plan's own work uses of its lifecycle (carry_out's Lifecycle extends it)."""

    @property
    def gh(self) -> GitHubPort: ...

    @property
    def repo(self) -> str: ...

    @property
    def folders(self) -> FolderCache: ...

    @property
    def store(self) -> FeedbackLog:
        """Where the guard comment's ledger and boxes are recorded (app/adr_review/pipeline/reporting/feedback.py)."""

    @property
    def boxes(self) -> bool:
        """Record the boxes as the comment shows them (the Action), not only edits seen (the App)."""

    @property
    def memo(self) -> StageMemo:
        """The plan's own stages: react, reply, config_error, capped, guard, the feedback writes."""

    @property
    def lock(self) -> LockFactory:
        """Around each comment write of the plan."""

    def writes(self, plan: Plan) -> bool:
        """The plan may write to GitHub (not a dry run, not a fork PR's read-only token)."""
        ...

    def guard_model(self, plan: Plan) -> tuple[LlmPort, PromptLibrary] | None:
        """The model of the guard's check, behind the repository's spend caps, and the prompts; None
        when no model is configured."""
        ...


# What the guard downloads of a diff at most: GitHub renders up to 20,000 lines / 1 MB of diff (a
# larger one answers 406); the cap keeps a proxy's or an Enterprise Server's bigger answer bounded too.
MAX_DIFF_CHARS = 2_000_000
REFUSED = frozenset({406, 422})  # GitHub will not render this diff (too large, too many files)

GuardResultKind = Literal[
    "created", "edited", "unchanged", "silent", "cleared", "not-posted", "refused", "superseded"
]


@dataclass(frozen=True)
class GuardOutcome:
    """What the guard run did, for the plan's report."""

    result: GuardResultKind
    key: str = ""
    decisions: tuple[str, ...] = ()  # the implicated ADRs' paths, as the comment lists them
    body: str = ""  # the comment (or the one-line silent note)
    url: str = ""
    note: str = ""  # why the guard could not run, or what it left out

    @property
    def silent(self) -> bool:
        return not self.decisions


def guarded_files(
    files: Iterable[ChangedFile], adr_globs: Sequence[str], paths: Sequence[str], ignore: Sequence[str]
) -> list[ChangedFile]:
    """The changed files the ADR guard reads: outside the ADR folders, under `paths` (none: anywhere)
    and not ignored (the guard's built-in lockfile, generated and vendored patterns, then `ignore`)."""
    patterns = (*DEFAULT_IGNORE, *ignore)
    return [
        f
        for f in files
        if not matches_any(f.path, adr_globs)
        and (not paths or matches_any(f.path, paths))
        and not ignored(f.path, patterns)
    ]


def budget_diff(diff: str, limit: int = MAX_DIFF_CHARS) -> tuple[str, list[str]]:
    """The diff up to the last whole file that fits in `limit` characters, and the note saying so."""
    if len(diff) <= limit:
        return diff, []
    header = "\ndiff --git "
    cut = diff.rfind(header, 0, limit + len(header) - 1)  # the newline ending the last whole file < limit
    kept = diff[: cut + 1] if cut > 0 else diff[:limit]
    files, read = diff.count("\ndiff --git ") + 1, kept.count("\ndiff --git ") + 1
    return kept, [f"the diff is {len(diff):,} characters; the guard read its first {read} of {files} files"]


def run_plan_guard(plan: Plan, lifecycle: PlanWork) -> GuardOutcome:
    g, config, number = plan.guard, plan.config, plan.number
    assert g is not None and config is not None and number is not None
    gh, repo = lifecycle.gh, lifecycle.repo
    try:
        raw = gh.pull_diff(repo, number)
    except GitHubError as exc:
        if exc.status not in REFUSED:
            raise
        return GuardOutcome(
            "refused",
            note=f"GitHub would not send the diff of #{number} ({exc.message}); the guard did not run.",
        )
    diff, notes = budget_diff(raw)
    listed = gh.list_files(repo, g.base_sha, adr_glob_roots(config.adr_paths))
    adrs = set(select_adrs((f.path for f in listed), config.adr_paths, accept=is_adr_candidate))
    key = guard_key(
        repo=repo, pr=number, diff=raw, folder_digest=folder_digest((f.path, f.blob_sha) for f in listed if f.path in adrs),
        config=config, prompt_hash=g.prompt_hash, online=g.online, title=g.title, body=g.body, nonce=g.nonce,
    )  # fmt: skip
    writes = lifecycle.writes(plan)
    ours = gh.find_comment(repo, number, GUARD_MARKER_PATH)
    if ours is not None and ours.marker_key == key:
        record_quietly(lifecycle.store, repo, number, GUARD_MARKER_PATH, ours.body, boxes=lifecycle.boxes)
        return GuardOutcome("unchanged", key, url=ours.html_url)
    found = lifecycle.memo("guard", lambda: _guard(plan, lifecycle, sorted(adrs), diff, notes), key=key)
    decisions, body = tuple(found["decisions"]), str(found["body"])
    answers = [guard_shown(*a) for a in found.get("answers", [])] if decisions else []
    if not decisions and ours is None:
        return GuardOutcome("silent", key, body=body, note="; ".join(notes))
    if not decisions:  # our earlier comment must not keep a claim the PR no longer makes
        body = render_guard((), (), 0.0, language=config.language, cleared=True)
    if not writes:
        return GuardOutcome("not-posted", key, decisions, body)
    text = marker(GUARD_MARKER_PATH, key, head=g.head_sha) + "\n" + body
    with lifecycle.lock(comment_lock_name(repo, number, GUARD_MARKER_PATH)):
        if gh.pull_request(repo, number).head_sha != g.head_sha:  # a newer push's run speaks for the PR
            return GuardOutcome("superseded", key, decisions, body)
        existing = gh.find_comment(repo, number, GUARD_MARKER_PATH)
        previous = existing.body if existing is not None else None
        # the ledger of what it showed (the diff is what the comment is about), the ticks carried over
        # its cost booked to this month (the Action's monthly cap reads it); the run key counts it once
        cost = float(found.get("cost_usd", 0.0))
        rev = revision(hashlib.sha256(raw.encode()).hexdigest(), answers, cost, key, read_ticks(text))
        text = stamped(text, rev, previous, month_of(time.time()))
        comment, created = write_comment(gh, repo, number, existing, text)
    record_quietly(lifecycle.store, repo, number, GUARD_MARKER_PATH, text, boxes=lifecycle.boxes)
    result: GuardResultKind = "created" if created else ("edited" if decisions else "cleared")
    return GuardOutcome(result, key, decisions, body, comment.html_url, "; ".join(notes))


def _guard(plan: Plan, lifecycle: PlanWork, adrs: list[str], diff: str, notes: list[str]) -> dict[str, Any]:
    """The guard over each ADR folder at the base; the most evident decisions of all, MAX_SHOWN at most."""
    g, config = plan.guard, plan.config
    assert g is not None and config is not None
    settings = config.guard
    ignore = (*DEFAULT_IGNORE, *settings.ignore)

    def keep(path: str) -> bool:
        return not matches_any(path, config.adr_paths) and (
            not settings.paths or matches_any(path, settings.paths)
        )

    found, cut, floor = [], list(notes), 0.0  # found: (decision, its folder)
    query = None  # the diff's query: the same for every folder (it reads only the diff and the PR)
    for adr_dir in sorted({posixpath.dirname(p) for p in adrs}):
        folder, index = lifecycle.folders.get(lifecycle.gh, lifecycle.repo, g.base_sha, adr_dir, config)
        result = run_guard(diff, index, folder, title=g.title, body=g.body, ignore=ignore, keep=keep)
        found += [(d, adr_dir) for d in result.decisions]
        floor, query = result.floor, result.query
        cut += [c for c in result.query.cut if c not in cut]
    # what the PR names first (it asked for those), then by evidence
    shown = sorted(found, key=lambda f: (not f[0].named, -f[0].probability))[:MAX_SHOWN]
    model = lifecycle.guard_model(plan) if g.online and shown and query is not None else None
    check = None
    if model is not None and query is not None:
        llm, prompts = model
        pairs = [(d.adr, d.lines) for d, _ in shown]
        check = check_decisions(pairs, query, llm, prompts, title=g.title, memo=lifecycle.memo)
    body = render_guard([d for d, _ in shown], cut, floor, check=check, language=config.language)
    answers = [[a.id, a.severity, a.title] for a in answers_shown([d for d, _ in shown], check)]
    return {
        "decisions": [posixpath.join(adr_dir, d.adr.path) for d, adr_dir in shown],
        "body": body,
        "answers": answers,  # the model's shown answers as the ledger lists them (id, verdict, ADR)
        "cost_usd": check.usage.cost_usd if check is not None else 0.0,  # what its checks cost
    }


__all__ = ["MAX_DIFF_CHARS", "GuardOutcome", "PlanWork", "budget_diff", "guarded_files", "run_plan_guard"]
