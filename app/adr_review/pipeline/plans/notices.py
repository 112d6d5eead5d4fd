"""The comments a plan posts besides the reviews: an invalid config, the ADRs left out by the per-run
cap, and the rule for PRs the team asked us to skip. Untrusted text (paths, messages) is sanitised."""

from __future__ import annotations

from adr_review.config import RepoConfig
from adr_review.core.markdown_safe import sanitize_code, sanitize_inline
from adr_review.core.marker import marker
from adr_review.core.triggers import PullRequestEvent
from adr_review.pipeline.plans.targets import Plan


def skip_reason(event: PullRequestEvent, config: RepoConfig) -> str | None:
    """A PR the team asked us to leave alone (a label, or `[skip adr-review]` in its title); a
    comment command on it still runs."""
    label = config.limits.skip_label
    if label and label.casefold() in (x.casefold() for x in event.labels):
        return f"adr-review: #{event.number} has the label {label!r}; not reviewed (comment `/adr-review` to run anyway)."
    if "[skip adr-review]" in event.title.casefold():
        return f"adr-review: #{event.number} says [skip adr-review] in its title; not reviewed."
    return None


CAPPED_MARKER_PATH = ".adr-review/not-reviewed"


def capped_comment(plan: Plan) -> str:
    """The one comment that lists the ADRs left out by `limits.max_adrs_per_run`, with the command
    that reviews them (edited in place, like every comment of ours)."""
    listed = "\n".join(f"- {sanitize_code(p, 300)}" for p in plan.capped)
    command = "/adr-review " + " ".join(plan.capped[:20])
    return (
        f"{marker(CAPPED_MARKER_PATH, 'capped-' + plan.head_sha[:12])}\n"
        f"**adr-review reviewed {len(plan.targets)} ADR(s) of this pull request** "
        f"(`limits.max_adrs_per_run`); these were not reviewed:\n\n{listed}\n\n"
        f"To review them, comment {sanitize_code(command, 4000)}\n"
    )


def config_error_comment(plan: Plan, config_path: str) -> str:
    """The App's PR comment for an invalid repo config (the Action reports it in the job instead)."""
    message = sanitize_inline(plan.config_error or "", 3000, in_table=False)
    return (
        f"{marker(config_path, 'config-error')}\n"
        f"**adr-review could not read its configuration**, so no ADR of this pull request was reviewed.\n\n"
        f"{message}\n\nFix the file on the default branch, then comment `/adr-review` to run again.\n"
    )
