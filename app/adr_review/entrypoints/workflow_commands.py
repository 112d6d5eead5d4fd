"""Reporting through the runner's file commands: `::error` / `::warning` annotations on stdout, the job
summary ($GITHUB_STEP_SUMMARY) and the outputs ($GITHUB_OUTPUT, `name<<DELIM` blocks). StepReport is
the Action's PlanReport (app/adr_review/pipeline/plans/carry_out.py): where each outcome of a plan shows on the run."""

from __future__ import annotations

import json
import math
import posixpath
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO

from adr_review.core.results import Review
from adr_review.pipeline.code_guard.guard_run import GuardOutcome
from adr_review.pipeline.keys import link_base
from adr_review.pipeline.plans.carry_out import RECENT_ANSWERS_S
from adr_review.pipeline.plans.pr import Plan, Published, Target
from adr_review.pipeline.ports import GitHubError, SyncReport
from adr_review.pipeline.reporting.report import report_markdown
from adr_review.pipeline.state_ports import FeedbackLog


class RunnerFiles(Protocol):
    """Where the runner reads the job summary and the outputs from (action_env.RunnerEnv)."""

    @property
    def step_summary(self) -> str | None: ...

    @property
    def output(self) -> str | None: ...


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


class Reporter:
    def __init__(self, runner: RunnerFiles | None, stdout: TextIO) -> None:
        self.runner = runner
        self.stdout = stdout
        self.summary: list[str] = []
        self.outputs: dict[str, str] = {"comment-urls": "", "citations-json": "[]", "findings-count": "0"}
        self.failed = False

    def line(self, text: str) -> None:
        print(text, file=self.stdout, flush=True)

    def annotate(
        self, level: str, message: str, *, file: str | None = None, title: str | None = None
    ) -> None:
        props = []
        if file:
            props.append(f"file={escape_property(file)}")
        if title:
            props.append(f"title={escape_property(title)}")
        prefix = f"::{level} {','.join(props)}::" if props else f"::{level}::"
        self.line(prefix + escape_data(message))

    def error(self, message: str, *, file: str | None = None, title: str | None = None) -> None:
        self.failed = True
        self.annotate("error", message, file=file, title=title)

    def flush(self) -> None:
        """Write the step summary and the outputs; without a runner (local run) print the summary."""
        text = "\n".join(self.summary).rstrip() + "\n"
        if self.runner and self.runner.step_summary:
            with open(self.runner.step_summary, "a", encoding="utf-8") as fh:
                fh.write(text)
        if self.runner and self.runner.output:
            with open(self.runner.output, "a", encoding="utf-8") as fh:
                for name, value in self.outputs.items():
                    fh.write(output_block(name, value))


def output_block(name: str, value: str) -> str:
    """The multi-line `name<<DELIM` form, with a delimiter that cannot occur in the value."""
    delim = f"ghadelimiter_{uuid.uuid4().hex}"
    while delim in value:
        delim = f"ghadelimiter_{uuid.uuid4().hex}"
    return f"{name}<<{delim}\n{value}\n{delim}\n"


def citations_json(reviews: Sequence[Review]) -> str:
    """The `citations-json` output; citation paths are repo-relative (Citation.path is folder-relative)."""
    from adr_review.core.serde import to_dict

    items = []
    for r in reviews:
        citations = []
        for c in r.recall.citations if r.recall else ():
            d = to_dict(c)
            d["path"] = posixpath.join(r.adr_dir, c.path) if r.adr_dir else c.path
            citations.append(d)
        items.append({"adr_path": r.adr_path, "adr_id": r.adr_id, "error": r.error, "citations": citations})
    return json.dumps(items, ensure_ascii=False)


def md_text(text: str) -> str:
    """Untrusted text (an error, a summary naming a file) as one safe Markdown paragraph."""
    from adr_review.core.markdown_safe import sanitize_inline

    return sanitize_inline(text, 2000, in_table=False)


def finish(reporter: Reporter, summary: str) -> None:
    reporter.line(summary)
    reporter.summary.append(md_text(summary))


def sync_line(adr_dir: str, ref: str, s: SyncReport, downloaded: int) -> str:
    return (
        f"adr-review: index {adr_dir or '/'}@{ref[:12]}: +{s.added} ~{s.updated} -{s.removed} ={s.unchanged}"
        f" ({s.embedding}, {s.seconds:.1f}s{', rebuilt' if s.rebuilt else ''}; {downloaded} ADR(s) downloaded)"
    )


def report_sync(reporter: Reporter, adr_dir: str, ref: str, s: SyncReport, downloaded: int) -> None:
    """The index line, then each problem the sync met (a model that failed, a missing extra) as a
    warning the run's page shows: retrieval went on without it, and the user should know why."""
    reporter.line(sync_line(adr_dir, ref, s, downloaded))
    for problem in s.errors:
        reporter.annotate("warning", problem, title=f"adr-review index {adr_dir or '/'}")


FEEDBACK_PERMISSIONS = (
    "the findings' answers (Adopted boxes, dismissals) were not read: give the scheduled workflow "
    "`pull-requests: read` and `issues: read` (docs/action.md)"
)


@dataclass
class StepReport:
    """The Action's PlanReport: each outcome of a plan as annotations, log lines, the job summary and
    the outputs (docs/action.md)."""

    rep: Reporter
    repo: str
    store: FeedbackLog
    server_url: str
    config_path: str
    fork_note: str
    dry: bool = False

    def notify(self, level: str, message: str, path: str | None) -> None:
        self.rep.annotate(level, message, file=path)

    def failed(self, target: Target, exc: GitHubError) -> None:
        """One ADR's GitHub failure: reported on its file, the other ADRs go on."""
        self.rep.error(f"{target.adr_path}: {exc}", file=target.adr_path, title="adr-review: GitHub API")

    def started(self, plan: Plan) -> None:
        if self.dry:
            self.rep.line("adr-review: dry run: nothing is written to GitHub.")
            if plan.reply:
                self.rep.line("adr-review: dry run: would reply:\n" + plan.reply)

    def done(self, plan: Plan, summary: str) -> None:
        finish(self.rep, summary)

    def config_error(self, plan: Plan) -> None:
        """The run fails: an annotation on the config file naming every problem (docs/action.md)."""
        self.rep.error(plan.config_error or "invalid config", file=self.config_path, title="adr-review")
        finish(self.rep, plan.summary)

    def reindexed(self, plan: Plan, rows: Sequence[tuple[str, int]], answers: dict[str, int] | str) -> None:
        """The index, the reading of reviewers' answers, then the feedback report (issue 17) in the job
        summary, also when the reading failed."""
        rep = self.rep
        rep.line(plan.summary)
        finish(
            rep,
            f"adr-review: indexed {sum(n for _, n in rows)} ADR(s) in {len(rows)} folder(s) of "
            f"{self.repo}@{plan.ref}.",
        )
        if rows:
            rep.summary += ["", "| Folder | ADRs |", "|:--|--:|", *(f"| {d or '/'} | {n} |" for d, n in rows)]
        if isinstance(answers, str):
            rep.annotate("warning", f"{answers}; {FEEDBACK_PERMISSIONS}")
        else:
            rep.line(
                f"adr-review: read the findings' answers on {answers.get('pulls', 0)} recently updated "
                f"PR(s): {answers.get('comments', 0)} review comment(s), "
                f"{answers.get('dismissed', 0)} dismissal(s)."
            )
        language = plan.config.language if plan.config else None
        lang = language if language in ("en", "ja") else None
        days = RECENT_ANSWERS_S / 86_400
        # The window ends after the reading (the store stamps what it read with the time it read it, and
        # the default branch's cache holds little else): [since, until), so strictly after it.
        until = math.nextafter(time.time(), math.inf)
        rep.summary += ["", report_markdown(self.store, self.repo, days, now=until, language=lang)]

    def reviewing(self, plan: Plan) -> None:
        rep = self.rep
        rep.line(plan.summary)
        rep.line(
            f"adr-review: {len(plan.targets)} ADR(s) changed: {', '.join(t.adr_path for t in plan.targets)}"
        )
        for path in plan.missing:
            rep.annotate("warning", f"{path} is not in {plan.head_sha[:12]}; skipped", file=path)
        if plan.capped:
            rep.annotate(
                "warning",
                f"{len(plan.capped)} more changed ADR(s) not reviewed (limits.max_adrs_per_run): "
                + ", ".join(plan.capped)
                + ". Comment `/adr-review "
                + " ".join(plan.capped[:20])
                + "` to review them.",
            )
        if plan.spend_note:
            rep.annotate("warning", f"no model calls in this run: {plan.spend_note}")

    def reviewed(self, plan: Plan, outcomes: Sequence[Published]) -> None:
        """Each ADR's line, the outputs, and the job summary: the reviews as the renderer shows them,
        then this run's comments."""
        from adr_review.core.feedback_boxes import rename_boxes
        from adr_review.core.render import render_step_summary, sanitize_inline

        rep = self.rep
        for target, out in zip(plan.targets, outcomes, strict=True):
            if out.result != "failed":
                rep.line(published_line(out, target.run_key, self.dry))
        reviews = [o.review for o in outcomes if o.review is not None]
        rep.outputs["comment-urls"] = "\n".join(o.url for o in outcomes if o.url)
        rep.outputs["citations-json"] = citations_json(reviews)
        rep.outputs["findings-count"] = str(sum(len(r.blindspots.findings) for r in reviews if r.blindspots))
        if plan.read_only:
            rep.summary += [f"> {self.fork_note}", ""]
        if reviews:  # the findings under the ids their comments show them by (what `dismiss` takes)
            base = link_base(self.server_url, self.repo, plan.targets[0].base_sha)
            page = render_step_summary(reviews, link_base=base)
            renames = {fresh: shown for o in outcomes for fresh, shown in o.ids.items()}
            rep.summary += [rename_boxes(page, renames).rstrip(), ""]
        rep.summary += ["### adr-review run", "", md_text(plan.summary), "", "| ADR | Comment |", "|:--|:--|"]
        counts: dict[str, int] = {}
        for o in outcomes:
            where = f"[{o.result}]({o.url})" if o.url else o.result
            if o.error:
                where += f": {sanitize_inline(o.error, 300)}"
            rep.summary.append(f"| {sanitize_inline(o.path, 300)} | {where} |")
            counts[o.result] = counts.get(o.result, 0) + 1
        rep.line("adr-review: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ".")

    def guarded(self, plan: Plan, outcome: GuardOutcome) -> None:
        """The guard's line and its section of the job summary: the comment, or "no decision implicated"."""
        rep = self.rep
        if plan.kind == "guard":
            rep.line(plan.summary)
        if outcome.result == "refused":
            rep.annotate("warning", outcome.note, title="adr-review: guard")
        elif outcome.note:
            rep.line(f"adr-review: guard: {outcome.note}")
        implicated = ", ".join(outcome.decisions) or "no decision implicated"
        lines = {
            "unchanged": f"guard comment already up to date ({outcome.key}); nothing recomputed",
            "silent": "no decision implicated; no comment",
            "not-posted": f"{implicated}; comment not posted ({'dry run' if self.dry else 'fork'})",
            "superseded": "the PR's head moved; the newer push's run writes the guard comment",
            "refused": "the guard did not run",
        }
        line = lines.get(outcome.result, f"{implicated}; comment {outcome.result}: {outcome.url}")
        rep.line(f"adr-review: guard: {line}")
        if outcome.result == "not-posted":
            rep.line(outcome.body)
        rep.summary += ["", "### adr-review guard", "", md_text(line)]
        if outcome.decisions and outcome.result != "unchanged":
            rep.summary += ["", outcome.body.rstrip()]
        rep.summary.append("")


def published_line(out: Published, run_key: str, dry: bool) -> str:
    if out.result == "unchanged":
        return f"adr-review: {out.path}: comment already up to date ({run_key}); nothing recomputed."
    if out.result == "not-posted":
        return f"adr-review: {out.path}: comment not posted ({'dry run' if dry else 'fork'}):\n{out.body}"
    if out.result == "failed":
        return f"adr-review: {out.path}: failed: {out.error}"
    return f"adr-review: {out.path}: comment {out.result}: {out.url}"
