"""`adr-review action`: the GitHub Action, a thin adapter from the runner to app/pipeline/pr.py.

The runner's environment and inputs are read (action_env), the adapters composed, `plan` and then
`run_target` for each target run inline with their run rows in the cache folder's state store
($GITHUB_WORKSPACE/.adr-review, restored by actions/cache), and the outcome reported through the
runner's file commands (workflow_commands). Everything external is injectable for the tests.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

from app.entrypoints.action_env import (
    FORK_NOTE,
    ActionError,
    ActionInputs,
    GitHubFactory,
    IndexFactory,
    LazyGitHub,
    LlmFactory,
    RunnerEnv,
    cache_dir,
    default_github_factory,
    default_index_factory,
    default_llm_factory,
    export_model_cache,
    folder_cache,
    read_event_file,
    state_store,
)
from app.entrypoints.workflow_commands import (
    FEEDBACK_PERMISSIONS,
    FEEDBACK_WINDOW_S,
    Reporter,
    finish,
    md_text,
    published_line,
    report_feedback,
    report_plan,
    report_reindex,
    report_reviews,
    report_targets,
)
from app.pipeline import feedback, pr
from app.pipeline.budget import Budget, BudgetedLlm
from app.pipeline.folders import reindex
from app.pipeline.inline import run_inline
from app.pipeline.keys import link_base
from app.pipeline.ports import GitHubError, GitHubPort, StateStore
from app.pipeline.report import report_markdown

log = logging.getLogger("adr-review.action")


def run_action(
    env: Mapping[str, str],
    *,
    dry_run: bool = False,
    github_factory: GitHubFactory | None = None,
    llm_factory: LlmFactory | None = None,
    index_factory: IndexFactory | None = None,
    stdout: TextIO | None = None,
) -> int:
    """One Action run. 0: done (also when there was nothing to do); 1: the run failed (reported)."""
    rep = Reporter(None, stdout or sys.stdout)
    try:
        rep.runner = runner = RunnerEnv.from_env(env)
        inputs = ActionInputs.from_env(env)
        if env is os.environ:  # a real run: the process environment is ours to set
            export_model_cache(os.environ, inputs.cache_dir)
        make_gh = github_factory or default_github_factory
        gh: Any = LazyGitHub(lambda: make_gh(inputs.github_token, runner.api_url))
        _run(runner, inputs, rep, gh, dry_run or inputs.dry_run, llm_factory or default_llm_factory,
             index_factory or default_index_factory)  # fmt: skip
    except (ActionError, GitHubError) as exc:
        title = "adr-review: GitHub API" if isinstance(exc, GitHubError) else "adr-review"
        rep.error(str(exc), file=getattr(exc, "file", None), title=title)
        rep.summary.append(f"**adr-review failed:** {md_text(str(exc))}")
    except Exception as exc:  # the last line of defence: report, never a bare traceback only
        log.exception("internal error")
        rep.error(f"internal error: {type(exc).__name__}: {exc}", title="adr-review")
        rep.summary.append(f"**adr-review failed:** internal error ({md_text(type(exc).__name__)})")
    try:
        rep.flush()
    except OSError as exc:
        rep.error(f"cannot write the step summary or outputs: {exc}")
    return 1 if rep.failed else 0


def _run(
    runner: RunnerEnv,
    inputs: ActionInputs,
    rep: Reporter,
    gh: GitHubPort,
    dry: bool,
    llm_factory: LlmFactory,
    index_factory: IndexFactory,
) -> None:
    from app.prompts import packaged

    repo, event = runner.repository, read_event_file(runner.event_name, runner.event_path, runner.repository)
    notify = lambda level, msg, f: rep.annotate(level, msg, file=f)  # noqa: E731
    cache = cache_dir(inputs.cache_dir)
    with state_store(cache, lambda msg: rep.annotate("warning", msg)) as store:
        spend = lambda c: Budget(store, repo, c.limits).blocked()  # noqa: E731
        ctx = pr.PrContext(event, repo, packaged().hash, inputs.model_available, inputs.config_path,
                           inputs.apply, spend)  # fmt: skip
        plan = pr.plan(ctx, gh)
        if not report_plan(rep, plan, dry=dry, config_path=inputs.config_path):
            return None
        if not dry:
            pr.respond(plan, gh, repo, notify=notify)
        if plan.kind in ("dismiss", "feedback") and not dry:
            return finish(rep, feedback.apply(plan, gh, store, repo).summary)
        if (
            plan.kind not in ("review", "reindex")
            or plan.config is None
            or not (plan.targets or plan.kind == "reindex")
        ):
            return finish(rep, plan.summary)
        folders = folder_cache(cache, rep, notify, index_factory)
        if plan.kind == "reindex":
            ref = getattr(event, "default_branch", "") or gh.default_branch(repo)
            rep.line(plan.summary)
            report_reindex(rep, repo, ref, reindex(gh, repo, ref, plan.config, folders))
            return _feedback_report(rep, gh, store, repo, plan.config.language)
        report_targets(rep, plan)
        writes = not (dry or plan.read_only)
        if writes and plan.capped:
            gh.upsert_comment(repo, plan.targets[0].pr, pr.CAPPED_MARKER_PATH, pr.capped_comment(plan))
        llm = (
            None if plan.read_only or plan.spend_note else llm_factory(inputs.anthropic_api_key, plan.config)
        )
        deps = pr.RunDeps(
            gh,
            BudgetedLlm(llm, Budget(store, repo, plan.config.limits)) if llm is not None else None,
            folders,
            runner.server_url,
            writes=writes,
            notify=notify,
            llm_unavailable_reason="budget_cap" if plan.spend_note else "no_api_key",
            feedback=store,
        )
        outcomes = run_inline(plan.targets, deps, store, on_failed=lambda t, exc: rep.error(
            f"{t.adr_path}: {exc}", file=t.adr_path, title="adr-review: GitHub API"))  # fmt: skip
    for target, out in zip(plan.targets, outcomes, strict=True):
        if out.result != "failed":
            rep.line(published_line(out, target.run_key, dry))
    base = link_base(runner.server_url, repo, plan.targets[0].base_sha)
    report_reviews(
        rep, plan.summary, outcomes, fork_note=FORK_NOTE if plan.read_only else None, link_base=base
    )
    return None


def _feedback_report(rep: Reporter, gh: GitHubPort, store: StateStore, repo: str, language: str) -> None:
    """The scheduled run, after the index: read reviewers' answers on recent PRs into the cached store,
    then write the feedback report (issue 17) to the job summary, also when the reading failed. The
    report's window ends after the reading: the store stamps what it reads with the time it read it, and
    on the default branch's cache that is most of what the report has to show."""
    try:  # the index is done whatever happens here; the answers wait for the next run
        report_feedback(rep, feedback.sync_recent(gh, store, repo, time.time() - FEEDBACK_WINDOW_S))
    except GitHubError as exc:
        rep.annotate("warning", f"{exc}; {FEEDBACK_PERMISSIONS}")
    lang = language if language in ("en", "ja") else None
    until = math.nextafter(time.time(), math.inf)  # the window is [since, until): strictly after the reading
    rep.summary += ["", report_markdown(store, repo, FEEDBACK_WINDOW_S / 86_400, now=until, language=lang)]
