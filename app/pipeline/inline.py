"""Runs in this process, one after the other, each with its run row in the state store: the Action's
lifecycle (the App's is the queue, app/pipeline/worker.py). queued -> running -> completed / failed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.pipeline import pr
from app.pipeline.checkpoint import memo_for
from app.pipeline.ports import GitHubError, StateStore
from app.pipeline.pr import Published, RunDeps, Target


def run_inline(
    targets: Sequence[Target],
    deps: RunDeps,
    store: StateStore,
    *,
    on_failed: Callable[[Target, GitHubError], None] | None = None,
) -> list[Published]:
    """Each target reviewed and published; a GitHub failure of one is reported and the rest go on."""
    out: list[Published] = []
    for target in targets:
        key = target.run_key
        meta = {
            "repo": target.repo,
            "pr": target.pr,
            "adr_path": target.adr_path,
            "head_sha": target.head_sha,
        }
        store.ensure_run(key, meta)
        store.set_state(key, "running")
        reused: list[str] = []
        try:
            published = pr.run_target(
                target, deps, memo_for(store, key, on_reuse=reused.append, salt=target.nonce), reused=reused
            )
        except GitHubError as exc:
            store.set_state(key, "failed", str(exc)[:2000])
            if on_failed is not None:
                on_failed(target, exc)
            out.append(Published(target.adr_path, "failed", error=str(exc)))
            continue
        error = published.review.error if published.review else None
        store.set_state(key, "failed" if error else "completed", error[:2000] if error else None)
        out.append(published)
    return out
