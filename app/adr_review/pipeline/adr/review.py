"""The review use case: one ADR (and the folder it belongs to) -> recall -> blind-spot DAG -> Review.

It computes and nothing else. Stages run through the caller's StageMemo (a stored stage is reused
instead of recomputed, every attempt recorded: seed 004); the run lifecycle (run rows, leases, states,
retries) belongs to the caller: inline in the Action and the CLI, the queue in the App
(app/adr_review/pipeline/plans/pr.py drives both). review_adr never raises for an ADR-level problem: a file that cannot
be parsed becomes Review.error (an error comment); model failures degrade inside the stages.
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from adr_review.config import RepoConfig
from adr_review.core.adr import Adr, AdrParseError, parse_adr
from adr_review.core.results import (
    INTERNAL_ERROR,
    BlindSpotResult,
    Citation,
    RecallResult,
    Review,
    RunMeta,
    Usage,
)
from adr_review.core.text import is_japanese
from adr_review.core.triggers import ALL_STAGES
from adr_review.pipeline.keys import run_key_for, seed_for
from adr_review.pipeline.ports import AdrIndex, LlmPort, PromptLibrary, StageMemo, no_memo
from adr_review.pipeline.structured import StepOverrides

log = logging.getLogger(__name__)

RecallFn = Callable[..., RecallResult]
# Why a review runs without a model: no key, an offline run, or the spend cap (app/adr_review/pipeline/plans/budget.py).
LlmUnavailable = Literal["no_api_key", "offline", "budget_cap"]
BlindSpotsFn = Callable[..., BlindSpotResult]


@dataclass(frozen=True)
class ReviewTarget:
    repo: str  # "owner/name"; "" for a local run
    pr: int | None
    head_sha: str
    base_sha: str
    adr_path: str  # repo-relative path of the ADR under review
    content: bytes
    force_nonce: str | None = None  # a forced re-run gets a new key (and edits the same comment)
    stages: frozenset[str] = ALL_STAGES

    def key(self, config: RepoConfig, prompt_hash: str, *, online: bool, folder_digest: str = "") -> str:
        return run_key_for(
            repo=self.repo,
            pr=self.pr,
            folder_digest=folder_digest,
            adr_path=self.adr_path,
            content=self.content,
            config=config,
            prompt_hash=prompt_hash,
            online=online,
            stages=self.stages,
            nonce=self.force_nonce,
        )


@dataclass(frozen=True)
class ReviewDeps:
    index: AdrIndex
    folder: Sequence[Adr]  # the parsed ADRs of the folder (supersession, summaries)
    llm: LlmPort | None  # None: offline or no API key -> extractive recall, no blind spots
    config: RepoConfig
    prompts: PromptLibrary  # the composition root's (loaded and hashed once)
    link_base: str | None = None  # for the comment: ".../blob/<base sha>", "" relative, None no links
    adr_dir: str = ""  # repo-relative folder of the ADRs; Adr.path and Citation.path are relative to it
    llm_unavailable_reason: LlmUnavailable = "no_api_key"
    recall_enabled: bool = True  # the process kill switch (Settings.recall_enabled)
    seed: int | None = None  # perspective draw; None: derived from the run key (reproducible)
    recall_fn: RecallFn | None = None  # None: adr_review.pipeline.adr.recall.run_recall
    blindspots_fn: BlindSpotsFn | None = None  # None: adr_review.pipeline.adr.blindspot.run_blindspots


# --------------------------------------------------------------------------------------------------
# Use case


def review_adr(
    target: ReviewTarget,
    deps: ReviewDeps,
    memo: StageMemo = no_memo,
    *,
    run_key: str | None = None,
    reused: Sequence[str] = (),
) -> Review:
    """Review one ADR. `memo` checkpoints the stages (the caller binds it to `run_key`); `reused` is
    the live list the memo appends reused stage names to, for the footer."""
    started = time.monotonic()
    if run_key is None:
        run_key = target.key(deps.config, deps.prompts.hash, online=deps.llm is not None)
    rel = relative_adr_path(target.adr_path, deps.adr_dir)
    try:
        adr = parse_adr(rel, target.content)
    except AdrParseError as exc:
        log.warning("adr_parse_failed", extra={"path": target.adr_path, "reason": exc.reason})
        return error_review(
            target, deps.config, deps.adr_dir, exc.reason, run_key, time.monotonic() - started
        )

    skipped: list[tuple[str, str]] = []
    recall: RecallResult | None = None
    if "recall" in target.stages:
        recall = _recall_fn(deps)(
            adr,
            deps.index,
            deps.folder,
            deps.llm,
            config=deps.config,
            memo=memo,
            enabled=deps.recall_enabled,
            prompts=deps.prompts,
        )
        skipped.extend(recall_skips(recall, offline_reason=offline_reason(deps)))
    else:
        skipped.append(("recall", "not_requested"))

    blind: BlindSpotResult | None = None
    if "blindspots" not in target.stages:
        skipped.append(("blindspots", "not_requested"))
    elif not deps.config.blindspot.enabled:
        skipped.append(("blindspots", "disabled"))
    elif deps.llm is None:
        skipped.append(("blindspots", deps.llm_unavailable_reason))
    else:
        citations: Sequence[Citation] = recall.citations if recall else ()
        blind = _blindspots_fn(deps)(
            adr,
            citations,
            deps.llm,
            config=deps.config.blindspot,
            seed=deps.seed if deps.seed is not None else perspective_seed(target),
            memo=memo,
            prompts=deps.prompts,
            overrides={
                name: StepOverrides.from_config(deps.config.llm, name) for name in deps.config.llm.prompts
            },
            language=_language(adr.language, deps.config),  # what the critics write in, as the comment
        )
        skipped.extend(blindspot_skips(blind))

    language = _language(adr.language, deps.config)
    usage = (recall.usage if recall else Usage()) + (blind.usage if blind else Usage())
    models = tuple(sorted({m for m in usage.model.split(",") if m}))
    meta = RunMeta(
        run_key=run_key,
        mode=f"recall:{recall.mode if recall else 'none'} blindspots:{blind.status if blind else 'none'}",
        models=models,
        usage=usage,
        duration_s=time.monotonic() - started,
        perspectives=_perspective_names(blind.selected_perspectives, language, deps.prompts) if blind else (),
        embedding=_embedding_of(recall),
        reused_stages=tuple(dict.fromkeys(reused)),
    )
    return Review(
        adr_path=target.adr_path,
        adr_id=adr.adr_id,
        adr_title=adr.title,
        language=language,
        recall=recall,
        blindspots=blind,
        skipped=tuple(skipped),
        meta=meta,
        adr_dir=deps.adr_dir,
    )


# --------------------------------------------------------------------------------------------------
# Pure helpers


def relative_adr_path(adr_path: str, adr_dir: str) -> str:
    """The ADR's path inside its folder (Adr.path), so recall can exclude it from its own candidates."""
    folder = adr_dir.strip("/")
    path = adr_path.lstrip("/")
    if folder and path.startswith(folder + "/"):
        return path[len(folder) + 1 :]
    return path if not folder else posixpath.basename(path)


def offline_reason(deps: ReviewDeps) -> str | None:
    return None if deps.llm is not None else deps.llm_unavailable_reason


def recall_skips(recall: RecallResult, *, offline_reason: str | None) -> list[tuple[str, str]]:
    """What degraded in recall, as (stage, reason) for the comment's "what did not run" section."""
    out: list[tuple[str, str]] = []
    if recall.mode == "disabled":
        return [("recall", "disabled")]
    if recall.mode == "extractive" and offline_reason is not None:
        out.append(("recall", {"offline": "extractive_offline", "budget_cap": "extractive_budget"}.get(
            offline_reason, "extractive_no_key")))  # fmt: skip
    retrieval = recall.diagnostics.get("retrieval")
    if isinstance(retrieval, Mapping) and retrieval.get("embedding_failed"):
        out.append(("recall", "embedding_failed"))
    fallback = recall.diagnostics.get("fallback_reason") if recall.diagnostics.get("fallback_from") else None
    if fallback is not None:
        out.append(("recall", "llm_fallback" if fallback in BARE else f"llm_fallback: {fallback}"))
    for err in recall.errors:
        if fallback is not None and err.message == fallback:
            continue  # said once, as the reason for the fallback
        if err.message in BARE:
            out.append(("recall", err.message))
            continue
        out.append(
            ("recall", f"llm_failed: {err.message}" if recall.mode == "llm" else f"failed: {err.message}")
        )
    return out


# Stage errors that are a reason code of their own (templates/i18n), shown without the "failed" prefix:
# a crash (its details are in the log only) and a search that failed.
BARE = frozenset({INTERNAL_ERROR, "search_failed"})


def blindspot_skips(blind: BlindSpotResult) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if blind.status == "skipped" and blind.skipped_reason:
        out.append(("blindspots", blind.skipped_reason))
    elif blind.status == "disabled":
        out.append(("blindspots", "disabled"))
    for err in blind.errors:
        code = "judge_failed" if err.node == "judge" else "failed"
        out.append((err.node, err.message if err.message in BARE else f"{code}: {err.message}"))
    return out


def perspective_seed(target: ReviewTarget) -> int:
    """The Devil's Advocate's draw follows the ADR's content (and a forced run's nonce), not the
    commit or the folder: an unchanged ADR keeps its perspectives, so its critic is not paid again."""
    digest = hashlib.sha256(target.content).hexdigest()
    return seed_for(f"{digest}:{target.force_nonce or ''}")


def _perspective_names(ids: Sequence[str], language: str, prompts: PromptLibrary) -> tuple[str, ...]:
    """The drawn perspectives by name, in the comment's language (the ids stay in BlindSpotResult)."""
    from adr_review.core.perspectives import ConstitutionError

    try:
        by_id = {p.id: p for p in prompts.constitution()}
    except ConstitutionError:
        return tuple(ids)
    return tuple(by_id[i].localized(language)[0] if i in by_id else i for i in ids)


def _embedding_of(recall: RecallResult | None) -> str:
    if recall is None:
        return ""
    retrieval = recall.diagnostics.get("retrieval")
    if isinstance(retrieval, Mapping):
        return str(retrieval.get("embedding") or "")
    return str(recall.diagnostics.get("embedding") or "")


def _language(adr_language: str, config: RepoConfig) -> Literal["en", "ja"]:
    forced = config.language
    if forced in ("en", "ja"):
        return "ja" if forced == "ja" else "en"
    return "ja" if adr_language == "ja" else "en"


def error_review(
    target: ReviewTarget, config: RepoConfig, adr_dir: str, error: str, run_key: str, duration: float
) -> Review:
    """The Review of an ADR that could not be reviewed: the comment says why."""
    text = target.content[:4000].decode("utf-8", errors="ignore")
    language: Literal["en", "ja"] = "ja" if is_japanese(text) else "en"
    if config.language in ("en", "ja"):
        language = "ja" if config.language == "ja" else "en"
    return Review(
        adr_path=target.adr_path,
        adr_id="",
        adr_title="",
        language=language,
        recall=None,
        blindspots=None,
        skipped=(),
        meta=RunMeta(run_key, "error", (), Usage(), duration, (), ""),
        error=error,
        adr_dir=adr_dir,
    )


def _recall_fn(deps: ReviewDeps) -> RecallFn:
    if deps.recall_fn is not None:
        return deps.recall_fn
    from adr_review.pipeline.adr.recall import run_recall

    return run_recall


def _blindspots_fn(deps: ReviewDeps) -> BlindSpotsFn:
    if deps.blindspots_fn is not None:
        return deps.blindspots_fn
    from adr_review.pipeline.adr.blindspot import run_blindspots

    return run_blindspots
