"""StageMemo over a CheckpointStore: reuse a stored stage result, or compute it, store it, record it.

Every call leaves one attempt row: `skipped-checkpoint` when the result was already stored (no LLM
call), `executed` (atomically with the checkpoint) when it was computed, `failed` when compute raised.
A store that cannot take the result raises InfrastructureError, logged `stage_not_stored`: the run's
lifecycle records that attempt (the App's worker, at run level, once the store answers again).
Tokens and cost of an attempt come from the payload's `usage` (or `usage_by_node`) when present, and
from the exception's `usage` attribute for a failed call that was still paid for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from adr_review.core.results import Usage
from adr_review.core.serde import SerdeError, from_dict
from adr_review.pipeline.ports import InfrastructureError, StageMemo
from adr_review.pipeline.state_ports import AttemptInfo, CheckpointStore

log = logging.getLogger(__name__)


def usage_of_payload(payload: Mapping[str, Any]) -> Usage:
    """The usage a stage payload reports: `usage`, else the sum of `usage_by_node`, else nothing."""
    try:
        if isinstance(payload.get("usage"), Mapping):
            return from_dict(Usage, payload["usage"])
        by_node = payload.get("usage_by_node")
        if isinstance(by_node, Mapping):
            total = Usage()
            for u in by_node.values():
                total = total + from_dict(Usage, u)
            return total
    except SerdeError:
        log.warning("checkpoint_usage_unreadable")
    return Usage()


def memo_for(
    store: CheckpointStore,
    run_key: str,
    *,
    owner: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_reuse: Callable[[str], None] | None = None,
    salt: str | None = None,
) -> StageMemo:
    """A StageMemo bound to one run. Thread-safe as far as the store is.

    A stage is served from, in order: this run's checkpoint (a resumed run), the content-addressed
    result of its `key` (any run that read the same inputs), else computed and stored as both.
    on_reuse(stage) is called for every stage not computed (the footer counts them). `salt` (a forced
    re-run's nonce) is mixed into every key, so `/adr-review` pays for fresh answers.
    """

    def result_key(stage: str, key: str) -> str:
        material = json.dumps([stage, key, salt], separators=(",", ":"))
        return "sr1-" + hashlib.sha256(material.encode()).hexdigest()[:40]

    def reused(stage: str, how: str) -> None:
        log.info("stage_reused", extra={"run_key": run_key, "stage": stage, "from": how})
        if on_reuse is not None:
            on_reuse(stage)

    def memo(stage: str, compute: Callable[[], dict[str, Any]], key: str | None = None) -> dict[str, Any]:
        stored = store.get(run_key, stage)
        if stored is not None:
            store.record_attempt(run_key, stage, None, "skipped-checkpoint", 0.0, Usage(), None, owner=owner)
            reused(stage, "checkpoint")
            return stored
        rkey = result_key(stage, key) if key is not None else None
        if rkey is not None:
            cached = store.get_result(rkey)
            if cached is not None:
                store.record_attempt(
                    run_key, stage, None, "skipped-checkpoint", 0.0, Usage(), f"content:{rkey}", owner=owner
                )
                reused(stage, "content")
                return cached
        started = clock()

        def failed(exc: BaseException) -> None:
            usage = getattr(exc, "usage", None)
            store.record_attempt(
                run_key,
                stage,
                None,
                "failed",
                clock() - started,
                usage if isinstance(usage, Usage) else Usage(),
                f"{type(exc).__name__}: {exc}"[:2000],
                owner=owner,
            )

        try:
            payload = compute()
        except BaseException as exc:
            failed(exc)
            raise
        info = AttemptInfo(duration_s=clock() - started, usage=usage_of_payload(payload), owner=owner)
        try:
            won = store.put(run_key, stage, None, payload, info)
        except InfrastructureError as exc:  # the store went away with the answer (the caller records it)
            log.warning("stage_not_stored", extra={"run_key": run_key, "stage": stage, "error": str(exc)})
            raise
        if rkey is not None:
            store.put_result(rkey, stage, payload)
        if won:
            return payload
        # Another worker stored this stage first: its result is authoritative, ours is discarded.
        winner = store.get(run_key, stage)
        return winner if winner is not None else payload

    return memo
