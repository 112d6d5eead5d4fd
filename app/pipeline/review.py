"""The review use case: one ADR (and the folder it belongs to) -> recall -> blind-spot DAG -> Review.

Stages run through a StageMemo over a CheckpointStore, keyed by the run key (repo, PR, head and base
SHA, ADR path and content, config, prompt files, whether a model is available). A stored stage is
reused instead of recomputed, and every attempt is recorded (seed 004). Two ways to drive it:

- Action / CLI: `review_adr` owns the run: ensure_run, state running -> completed / failed, and with
  `owner` set, a lease (a second process with the same key records `skipped-locked` and gets RunLocked).
- App worker: the worker owns the lifecycle (queue, leases, retries) and passes `memo_factory`;
  review_adr then only computes.

review_adr never raises for an ADR-level problem: a file that cannot be parsed becomes Review.error
(an error comment). Model failures degrade inside the stages. review_many isolates ADRs from each
other: one failing (even with an unexpected exception) never stops the others.
"""

from __future__ import annotations

import hashlib
import json
import logging
import posixpath
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.config import RepoConfig
from app.core.adr import Adr, AdrParseError, parse_adr
from app.core.results import BlindSpotResult, Citation, RecallResult, Review, RunMeta, Usage
from app.core.serde import SERDE_VERSION
from app.core.text import is_japanese
from app.pipeline.checkpoint import memo_for
from app.pipeline.ports import AdrIndex, CheckpointStore, LlmPort, StageMemo
from app.pipeline.structured import StepOverrides
from app.prompts import PROMPTS_DIR

log = logging.getLogger(__name__)

RUN_KEY_VERSION = 1
ALL_STAGES: frozenset[str] = frozenset({"recall", "blindspots"})

RecallFn = Callable[..., RecallResult]
BlindSpotsFn = Callable[..., BlindSpotResult]


class RunLocked(Exception):
    """Another worker holds the lease of this run; the attempt was recorded as skipped-locked."""

    def __init__(self, run_key: str) -> None:
        super().__init__(f"run {run_key} is locked by another worker")
        self.run_key = run_key


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


@dataclass(frozen=True)
class ReviewDeps:
    index: AdrIndex
    folder: Sequence[Adr]  # the parsed ADRs of the folder (supersession, summaries)
    llm: LlmPort | None  # None: offline or no API key -> extractive recall, no blind spots
    store: CheckpointStore
    config: RepoConfig
    link_base: str | None = None  # for the comment: ".../blob/<base sha>", "" relative, None no links
    adr_dir: str = ""  # repo-relative folder of the ADRs; Adr.path and Citation.path are relative to it
    llm_unavailable_reason: Literal["no_api_key", "offline"] = "no_api_key"
    recall_enabled: bool = True  # the process kill switch (Settings.recall_enabled)
    prompts_dir: Path | None = None
    owner: str | None = None  # set: take a lease on the run (several processes share the store)
    lease_ttl_s: float = 900.0
    memo_factory: Callable[[str], StageMemo] | None = None  # set: the caller owns the run lifecycle
    seed: int | None = None  # perspective draw; None: derived from the run key (reproducible)
    recall_fn: RecallFn | None = None  # None: app.pipeline.recall.run_recall
    blindspots_fn: BlindSpotsFn | None = None  # None: app.pipeline.blindspot.run_blindspots


# --------------------------------------------------------------------------------------------------
# Run key


def prompts_hash(prompts_dir: Path | None = None) -> str:
    """Hash of every prompt file that can change a stage's result (golden cases excluded)."""
    root = prompts_dir or PROMPTS_DIR
    h = hashlib.sha256()
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            if not p.is_file() or "/golden/" in f"/{rel}" or any(part.startswith(".") for part in p.parts):
                continue
            h.update(rel.encode())
            h.update(b"\0")
            h.update(p.read_bytes())
            h.update(b"\0")
    return h.hexdigest()[:16]


def config_hash(config: RepoConfig) -> str:
    text = json.dumps(config.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_key_for(target: ReviewTarget, config: RepoConfig, prompt_hash: str, *, online: bool = True) -> str:
    """Same inputs, same key: a re-run reuses the stored stages. online=False (no model) is part of the
    key, so adding an API key later recomputes instead of reusing the extractive results."""
    material = {
        "v": RUN_KEY_VERSION,
        "serde": SERDE_VERSION,
        "repo": target.repo,
        "pr": target.pr,
        "head": target.head_sha,
        "base": target.base_sha,
        "path": target.adr_path,
        "content": hashlib.sha256(target.content).hexdigest(),
        "config": config_hash(config),
        "prompts": prompt_hash,
        "online": online,
        "stages": sorted(target.stages),
        "nonce": target.force_nonce,
    }
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return f"rk{RUN_KEY_VERSION}-{digest[:32]}"


# --------------------------------------------------------------------------------------------------
# Use case


def review_adr(target: ReviewTarget, deps: ReviewDeps) -> Review:
    started = time.monotonic()
    online = deps.llm is not None
    run_key = run_key_for(target, deps.config, prompts_hash(deps.prompts_dir), online=online)
    owns_run = deps.memo_factory is None
    if owns_run:
        deps.store.ensure_run(run_key, _run_meta(target))
        if deps.owner is not None:
            if not deps.store.claim(run_key, deps.owner, deps.lease_ttl_s):
                deps.store.record_attempt(run_key, "run", None, "skipped-locked", owner=deps.owner)
                log.info("run_locked", extra={"run_key": run_key, "path": target.adr_path})
                raise RunLocked(run_key)
        else:
            deps.store.set_state(run_key, "running")
    try:
        review = _review(target, deps, run_key, started)
    except Exception as exc:
        if owns_run:
            deps.store.set_state(run_key, "failed", f"{type(exc).__name__}: {exc}"[:2000])
        raise
    finally:
        if owns_run and deps.owner is not None:
            deps.store.release(run_key, deps.owner)
    if owns_run:
        if review.error:
            deps.store.set_state(run_key, "failed", review.error[:2000])
        else:
            deps.store.set_state(run_key, "completed")
    return review


def review_many(targets: Iterable[ReviewTarget], deps: ReviewDeps) -> list[Review]:
    """Each ADR independently; an unexpected failure of one becomes that ADR's error Review. A run
    locked by another worker is left out (that worker will publish it)."""
    reviews: list[Review] = []
    for target in targets:
        try:
            reviews.append(review_adr(target, deps))
        except RunLocked:
            continue
        except Exception as exc:
            log.exception("review_failed", extra={"path": target.adr_path})
            key = run_key_for(
                target, deps.config, prompts_hash(deps.prompts_dir), online=deps.llm is not None
            )
            reviews.append(
                _error_review(target, deps, f"internal error: {type(exc).__name__}: {exc}", key, 0.0)
            )
    return reviews


def _review(target: ReviewTarget, deps: ReviewDeps, run_key: str, started: float) -> Review:
    rel = relative_adr_path(target.adr_path, deps.adr_dir)
    try:
        adr = parse_adr(rel, target.content)
    except AdrParseError as exc:
        log.warning("adr_parse_failed", extra={"path": target.adr_path, "reason": exc.reason})
        deps.store.record_attempt(run_key, "parse", None, "failed", error=exc.reason)
        return _error_review(target, deps, exc.reason, run_key, time.monotonic() - started)

    reused: list[str] = []
    memo: StageMemo
    if deps.memo_factory is None:
        memo = memo_for(deps.store, run_key, owner=deps.owner, on_reuse=reused.append)
    else:
        inner = deps.memo_factory(run_key)

        def memo(stage: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
            # The caller's memo hides reuse; a stored checkpoint is what it will serve.
            if deps.store.get(run_key, stage) is not None:
                reused.append(stage)
            return inner(stage, compute)

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
            prompts_dir=deps.prompts_dir,
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
            seed=deps.seed if deps.seed is not None else seed_for(run_key),
            memo=memo,
            prompts_dir=deps.prompts_dir,
            overrides={
                name: StepOverrides.from_config(deps.config.llm, name) for name in deps.config.llm.prompts
            },
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
        perspectives=_perspective_names(blind.selected_perspectives, language, deps.prompts_dir)
        if blind
        else (),
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


def seed_for(run_key: str) -> int:
    return int(hashlib.sha256(run_key.encode()).hexdigest()[:8], 16)


def offline_reason(deps: ReviewDeps) -> str | None:
    return None if deps.llm is not None else deps.llm_unavailable_reason


def recall_skips(recall: RecallResult, *, offline_reason: str | None) -> list[tuple[str, str]]:
    """What degraded in recall, as (stage, reason) for the comment's "what did not run" section."""
    out: list[tuple[str, str]] = []
    if recall.mode == "disabled":
        return [("recall", "disabled")]
    if recall.mode == "extractive" and offline_reason is not None:
        out.append(("recall", "extractive_offline" if offline_reason == "offline" else "extractive_no_key"))
    retrieval = recall.diagnostics.get("retrieval")
    if isinstance(retrieval, Mapping) and retrieval.get("embedding_failed"):
        out.append(("recall", "embedding_failed"))
    for err in recall.errors:
        out.append(
            ("recall", f"llm_failed: {err.message}" if recall.mode == "llm" else f"failed: {err.message}")
        )
    return out


def blindspot_skips(blind: BlindSpotResult) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if blind.status == "skipped" and blind.skipped_reason:
        out.append(("blindspots", blind.skipped_reason))
    elif blind.status == "disabled":
        out.append(("blindspots", "disabled"))
    for err in blind.errors:
        code = "judge_failed" if err.node == "judge" else "failed"
        out.append((err.node, f"{code}: {err.message}"))
    return out


def _perspective_names(ids: Sequence[str], language: str, prompts_dir: Path | None) -> tuple[str, ...]:
    """The drawn perspectives by name, in the comment's language (the ids stay in BlindSpotResult)."""
    from app.core.perspectives import ConstitutionError
    from app.pipeline.blindspot import load_constitution

    try:
        by_id = {p.id: p for p in load_constitution(prompts_dir)}
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


def _run_meta(target: ReviewTarget) -> dict[str, Any]:
    return {
        "repo": target.repo,
        "pr": target.pr,
        "head_sha": target.head_sha,
        "base_sha": target.base_sha,
        "adr_path": target.adr_path,
        "stages": sorted(target.stages),
        "forced": target.force_nonce is not None,
    }


def _error_review(
    target: ReviewTarget, deps: ReviewDeps, error: str, run_key: str, duration: float
) -> Review:
    text = target.content[:4000].decode("utf-8", errors="ignore")
    language: Literal["en", "ja"] = "ja" if is_japanese(text) else "en"
    if deps.config.language in ("en", "ja"):
        language = "ja" if deps.config.language == "ja" else "en"
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
        adr_dir=deps.adr_dir,
    )


def _recall_fn(deps: ReviewDeps) -> RecallFn:
    if deps.recall_fn is not None:
        return deps.recall_fn
    from app.pipeline.recall import run_recall

    return run_recall


def _blindspots_fn(deps: ReviewDeps) -> BlindSpotsFn:
    if deps.blindspots_fn is not None:
        return deps.blindspots_fn
    from app.pipeline.blindspot import run_blindspots

    return run_blindspots
