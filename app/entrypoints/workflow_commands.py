"""Reporting through the runner's file commands: `::error` / `::warning` annotations on stdout, the job
summary ($GITHUB_STEP_SUMMARY) and the outputs ($GITHUB_OUTPUT, `name<<DELIM` blocks)."""

from __future__ import annotations

import json
import posixpath
import uuid
from collections.abc import Mapping, Sequence
from typing import TextIO

from app.core.results import Review
from app.entrypoints.action_env import RunnerEnv
from app.pipeline.ports import SyncReport
from app.pipeline.pr import Plan, Published


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


class Reporter:
    def __init__(self, runner: RunnerEnv | None, stdout: TextIO) -> None:
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
    from app.core.serde import to_dict

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
    from app.core.markdown_safe import sanitize_inline

    return sanitize_inline(text, 2000, in_table=False)


def finish(reporter: Reporter, summary: str) -> None:
    reporter.line(summary)
    reporter.summary.append(md_text(summary))


def report_reviews(
    reporter: Reporter, summary: str, outcomes: Sequence[Published], *, fork_note: str | None, link_base: str
) -> None:
    """Outputs, and the job summary: the reviews as the renderer shows them, then this run's comments."""
    from app.core.feedback import rename_boxes
    from app.core.render import render_step_summary, sanitize_inline

    reviews = [o.review for o in outcomes if o.review is not None]
    reporter.outputs["comment-urls"] = "\n".join(o.url for o in outcomes if o.url)
    reporter.outputs["citations-json"] = citations_json(reviews)
    reporter.outputs["findings-count"] = str(sum(len(r.blindspots.findings) for r in reviews if r.blindspots))
    if fork_note:
        reporter.summary += [f"> {fork_note}", ""]
    if reviews:  # the findings under the ids their comments show them by (what `dismiss` takes)
        page = render_step_summary(reviews, link_base=link_base)
        renames = {fresh: shown for o in outcomes for fresh, shown in o.ids.items()}
        reporter.summary += [rename_boxes(page, renames).rstrip(), ""]
    reporter.summary += ["### adr-review run", "", md_text(summary), "", "| ADR | Comment |", "|:--|:--|"]
    counts: dict[str, int] = {}
    for o in outcomes:
        where = f"[{o.result}]({o.url})" if o.url else o.result
        if o.error:
            where += f": {sanitize_inline(o.error, 300)}"
        reporter.summary.append(f"| {sanitize_inline(o.path, 300)} | {where} |")
        counts[o.result] = counts.get(o.result, 0) + 1
    reporter.line("adr-review: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ".")


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


def published_line(out: Published, run_key: str, dry: bool) -> str:
    if out.result == "unchanged":
        return f"adr-review: {out.path}: comment already up to date ({run_key}); nothing recomputed."
    if out.result == "not-posted":
        return f"adr-review: {out.path}: comment not posted ({'dry run' if dry else 'fork'}):\n{out.body}"
    if out.result == "failed":
        return f"adr-review: {out.path}: failed: {out.error}"
    return f"adr-review: {out.path}: comment {out.result}: {out.url}"


def report_reindex(reporter: Reporter, repo: str, ref: str, rows: Sequence[tuple[str, int]]) -> None:
    finish(
        reporter,
        f"adr-review: indexed {sum(n for _, n in rows)} ADR(s) in {len(rows)} folder(s) of {repo}@{ref}.",
    )
    if rows:
        reporter.summary += [
            "",
            "| Folder | ADRs |",
            "|:--|--:|",
            *(f"| {d or '/'} | {n} |" for d, n in rows),
        ]


FEEDBACK_WINDOW_S = 30 * 86_400  # the scheduled run reads the comments of PRs updated this recently
FEEDBACK_PERMISSIONS = (
    "the findings' answers (Adopted boxes, dismissals) were not read: give the scheduled workflow "
    "`pull-requests: read` and `issues: read` (docs/action.md)"
)


def report_feedback(reporter: Reporter, counts: Mapping[str, int]) -> None:
    """The scheduled run's reading of reviewers' answers (app/pipeline/feedback.py: sync_recent)."""
    reporter.line(
        f"adr-review: read the findings' answers on {counts.get('pulls', 0)} recently updated PR(s): "
        f"{counts.get('comments', 0)} review comment(s), {counts.get('dismissed', 0)} dismissal(s)."
    )


def report_plan(reporter: Reporter, plan: Plan, *, dry: bool, config_path: str) -> bool:
    """What the plan says before anything runs; False: the run stops here (the config is invalid)."""
    if dry:
        reporter.line("adr-review: dry run: nothing is written to GitHub.")
    if plan.kind == "config_error":
        reporter.error(plan.config_error or "invalid config", file=config_path, title="adr-review")
        finish(reporter, plan.summary)
        return False
    if plan.reply and dry:
        reporter.line("adr-review: dry run: would reply:\n" + plan.reply)
    return True


def report_targets(reporter: Reporter, plan: Plan) -> None:
    reporter.line(plan.summary)
    paths = ", ".join(t.adr_path for t in plan.targets)
    reporter.line(f"adr-review: {len(plan.targets)} ADR(s) changed: {paths}")
    for path in plan.missing:
        reporter.annotate("warning", f"{path} is not in {plan.head_sha[:12]}; skipped", file=path)
    if plan.capped:
        reporter.annotate(
            "warning",
            f"{len(plan.capped)} more changed ADR(s) not reviewed (limits.max_adrs_per_run): "
            + ", ".join(plan.capped)
            + ". Comment `/adr-review "
            + " ".join(plan.capped[:20])
            + "` to review them.",
        )
    if plan.spend_note:
        reporter.annotate("warning", f"no model calls in this run: {plan.spend_note}")
