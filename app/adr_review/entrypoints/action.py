"""`adr-review action`: the GitHub Action, wiring from the runner to the shared use case.

The runner's environment and inputs are read (action_env), the adapters composed, the event planned
(app/adr_review/pipeline/plans/pr.py) and the plan carried out (app/adr_review/pipeline/plans/carry_out.py) with the Inline lifecycle:
the reviews run here, with their run rows in the cache folder's state store ($GITHUB_WORKSPACE/
.adr-review, restored by actions/cache). The outcome is reported through the runner's file commands
(workflow_commands.StepReport). Everything external is injectable for the tests.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import TextIO

from adr_review.core.results import internal_error
from adr_review.entrypoints.action_env import (
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
from adr_review.entrypoints.llm_auth import AuthWatches, refused_message
from adr_review.entrypoints.workflow_commands import Reporter, StepReport, md_text, report_sync
from adr_review.pipeline.plans import pr
from adr_review.pipeline.plans.budget import Budget, PublishedMonth
from adr_review.pipeline.plans.carry_out import carry_out
from adr_review.pipeline.plans.inline import Inline
from adr_review.pipeline.ports import GitHubError, InfrastructureError

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
        _run(runner, inputs, rep, dry_run or inputs.dry_run, github_factory or default_github_factory,
             llm_factory or default_llm_factory, index_factory or default_index_factory)  # fmt: skip
    except (ActionError, GitHubError) as exc:
        title = "adr-review: GitHub API" if isinstance(exc, GitHubError) else "adr-review"
        rep.error(str(exc), file=exc.file if isinstance(exc, ActionError) else None, title=title)
        rep.summary.append(f"**adr-review failed:** {md_text(str(exc))}")
    except InfrastructureError as exc:  # the store or the index failed mid-review: nothing half-published
        log.error("infrastructure error", exc_info=exc)
        rep.error(
            f"{exc}. The review did not finish, so no comment was written from it; re-run the job.",
            title="adr-review: state store or index unavailable",
        )
        rep.summary.append("**adr-review failed:** the state store or the ADR index was unavailable")
    except Exception as exc:  # the last line of defence: report, never a bare traceback only
        log.exception("internal error")
        rep.error(internal_error(exc), title="adr-review")
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
    dry: bool,
    github_factory: GitHubFactory,
    llm_factory: LlmFactory,
    index_factory: IndexFactory,
) -> None:
    from adr_review.prompts import packaged

    repo, event = runner.repository, read_event_file(runner.event_name, runner.event_path, runner.repository)
    prompts = packaged()
    gh = LazyGitHub(lambda: github_factory(inputs.github_token, runner.api_url))
    watched = AuthWatches(lambda config: llm_factory(inputs.anthropic_api_key, config))
    cache = cache_dir(inputs.cache_dir)
    with state_store(cache, lambda msg: rep.annotate("warning", msg)) as store:
        report = StepReport(rep, repo, store, runner.server_url, inputs.config_path, FORK_NOTE, dry)
        ledger = PublishedMonth(store, lambda since: [c.body for c in gh.our_comments_since(repo, since)])
        ctx = pr.PrContext(
            event,
            repo,
            prompts.hash,
            inputs.model_available,
            inputs.config_path,
            inputs.apply,
            lambda c: Budget(ledger, repo, c.limits).blocked(),
        )
        plan = pr.plan(ctx, gh)
        synced = lambda d, ref, s, n: report_sync(rep, d, ref, s, n)  # noqa: E731
        folders = folder_cache(cache, report.notify, index_factory, synced)
        lifecycle = Inline(
            gh,
            repo,
            store,
            folders,
            prompts,
            runner.server_url,
            watched,
            dry_run=dry,
            config_path=inputs.config_path,
            notify=report.notify,
            on_failed=report.failed,
            ledger=ledger,
        )
        carry_out(plan, lifecycle, report)
    if watched.refused is not None:  # the comments say it too; the step must fail, not pass quietly
        message = refused_message(watched.refused, watched.provider, "action")
        rep.error(message, title="adr-review: model provider")
        rep.summary.append(f"**adr-review failed:** {md_text(message)}")
