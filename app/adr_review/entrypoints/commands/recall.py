"""`adr-review recall --adr-dir DIR (--file PATH | --text TEXT) [--top 5] [--json] [--explain] [--offline]`

The past ADRs most related to a proposal, by hybrid retrieval (BM25 + title coverage + embedding),
qualified by the OR-gate; unqualified fill-ins are marked. The index is refreshed incrementally first
(built on the fly when missing). With --file the proposal is parsed as an ADR and the query is its
title + context + options + decision; a proposal inside --adr-dir is never its own candidate.

The candidate part of the output is built by `candidates_to_json` and `format_candidates`; the
citations come from the recall stage (app/adr_review/pipeline/recall.run_recall): chosen by the model and verified
when ANTHROPIC_API_KEY is set (and not --offline), extractive otherwise. --json prints
{"mode", "citations", "candidates", "empty_reason", "dropped", "usage", "errors", "diagnostics"}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adr_review.entrypoints.commands.common import (
    add_index_arguments,
    folder_relative,
    open_synced,
    retrieval_config,
    setup_logging,
    sync_summary,
)

if TYPE_CHECKING:
    from adr_review.adapters.index_open import Synced
    from adr_review.config import RepoConfig, RetrievalConfig
    from adr_review.core.adr import Adr
    from adr_review.core.results import Candidate, RecallResult, RetrievalResult

PROG = "adr-review recall"


def configure(parser: argparse.ArgumentParser) -> None:
    add_index_arguments(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--file", type=Path, help="the proposal (an ADR markdown file)")
    source.add_argument("--text", help="the proposal as plain text")
    parser.add_argument("--top", type=int, default=5, help="how many candidates to show (default 5)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--explain", action="store_true", help="per candidate: dense, BM25, relative BM25, title, fused, why"
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="no model call even with ANTHROPIC_API_KEY: extractive citations",
    )


def candidate_to_json(c: Candidate) -> dict[str, Any]:
    return {
        "adr_id": c.adr.adr_id,
        "path": c.adr.path,
        "title": c.adr.title,
        "status": c.adr.status,
        "score": round(c.fused, 4),
        "qualified": c.qualified,
        "dense": None if c.dense is None else round(c.dense, 4),
        "bm25": round(c.bm25, 4),
        "bm25_rel": round(c.bm25_rel, 4),
        "title_match": round(c.title_match, 4),
        "why": c.why,
    }


def candidates_to_json(result: RetrievalResult, top: int | None = None) -> dict[str, Any]:
    """{"candidates": [...], "empty_reason": ..., "diagnostics": {...}}: the retrieval part of --json."""
    shown = result.candidates[:top] if top else result.candidates
    return {
        "candidates": [candidate_to_json(c) for c in shown],
        "empty_reason": result.empty_reason,
        "diagnostics": _jsonable(dict(result.diagnostics)),
    }


def format_candidates(result: RetrievalResult, explain: bool = False, top: int | None = None) -> str:
    """Human-readable candidate list (with --explain: every score and the qualification reason)."""
    diag = result.diagnostics
    lines = [
        f"embedding: {diag.get('embedding', '?')}"
        + (" (FAILED: lexical-only)" if diag.get("embedding_failed") else "")
    ]
    shown = result.candidates[:top] if top else result.candidates
    if not shown:
        lines.append(f"no candidates: {result.empty_reason or 'no_candidates'}")
        return "\n".join(lines)
    if result.empty_reason:
        lines.append(f"note: {result.empty_reason} (showing unqualified fill-ins)")
    width = max(len(c.adr.adr_id) for c in shown)
    for i, c in enumerate(shown, start=1):
        mark = " " if c.qualified else "~"
        lines.append(
            f"{i:>2}.{mark}{c.adr.adr_id:<{width}}  {c.fused:.3f}  [{c.adr.status}]  {c.adr.title}  ({c.adr.path})"
        )
        if explain:
            dense = "n/a" if c.dense is None else f"{c.dense:.3f}"
            lines.append(
                f"      dense {dense}  bm25 {c.bm25:.2f}  bm25_rel {c.bm25_rel:.2f}  "
                f"title {c.title_match:.2f}  fused {c.fused:.3f}"
            )
            lines.append(f"      {c.why}")
    if any(not c.qualified for c in shown):
        lines.append("~ = unqualified fill-in (below both relevance gates)")
    if explain and "params" in diag:
        p = diag["params"]
        lines.append(
            "fused = {bm25_weight:g}*bm25_rel + {dense_weight:g}*minmax(dense) + {title_weight:g}*title; "
            "qualified when dense >= {qualify_cosine:g} or bm25_rel >= {qualify_bm25_rel:g}; "
            "mmr lambda {mmr_lambda:g}".format(**p)
        )
    return "\n".join(lines)


def read_proposal(path: Path, adr_dir: Path) -> tuple[str, bytes, bool]:
    """The proposal's path as the recall names it (relative to the ADR folder when it lives there),
    its bytes, and whether it lives in the folder (then the parse cache may already hold its parse)."""
    from adr_review.adapters.adr_files import bounded_bytes
    from adr_review.core.adr_paths import printable_path

    inside = folder_relative(path, adr_dir)
    return inside or printable_path(path.name), bounded_bytes(path), inside is not None


def parse_proposal(rel: str, data: bytes, inside: bool, synced: Synced) -> Adr:
    """The proposal parsed. A file of the folder that the sync found unchanged is the parse cache's
    parse of the same bytes (equal to a fresh one): no Markdown or YAML parser is loaded for it.
    AdrParseError when the bytes are no ADR."""
    if inside:
        cached = synced.parse_of(rel, hashlib.sha256(data).hexdigest())
        if cached is not None:
            return cached
    from adr_review.core.adr import parse_adr

    return parse_adr(rel, data)


def run(args: argparse.Namespace) -> int:
    setup_logging()
    if not args.adr_dir.is_dir():
        print(f"{PROG}: {args.adr_dir}: not a folder", file=sys.stderr)
        return 2
    if args.top < 1:
        print(f"{PROG}: --top must be >= 1", file=sys.stderr)
        return 2
    from adr_review.core.adr import AdrParseError
    from adr_review.entrypoints.errors import error_text

    try:
        config = retrieval_config(args)
        repo = _repo_config(args, config.model_copy(update={"top_n": max(config.top_n, args.top)}))
        source = read_proposal(args.file, args.adr_dir) if args.file is not None else _text_source(args.text)
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {error_text(exc)}", file=sys.stderr)
        return 2
    opened = open_synced(PROG, args, config)
    if isinstance(opened, int):
        return opened
    index, synced = opened
    try:
        proposal = parse_proposal(*source, synced)
    except AdrParseError as exc:
        print(f"{PROG}: {error_text(exc)}", file=sys.stderr)
        return 2
    recall, refused = _recall(args, proposal, index, synced.adrs, repo)
    result = _retrieval_of(recall)
    if result.diagnostics.get("embedding_failed"):
        print(
            f"{PROG}: WARNING: embedding {index.embedding} failed; candidates are lexical-only (BM25): "
            f"{result.diagnostics.get('embedding_error') or index.embedding_error}",
            file=sys.stderr,
        )
    sync = synced.report
    extra = {
        "sync": {
            "added": sync.added,
            "updated": sync.updated,
            "removed": sync.removed,
            "unchanged": sync.unchanged,
            "rebuilt": sync.rebuilt,
            "seconds": round(sync.seconds, 3),
        }
    }
    if args.json:
        payload = {**recall_to_json(recall), **candidates_to_json(result, args.top)}
        payload["empty_reason"] = recall.empty_reason
        payload["diagnostics"].update(extra)
        payload["diagnostics"]["recall"] = _jsonable(
            {k: v for k, v in recall.diagnostics.items() if not k.startswith("retrieval")}
        )
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        if sync.added or sync.updated or sync.removed:
            print(sync_summary(sync), file=sys.stderr)
        print(format_citations(recall))
        print(format_candidates(result, explain=args.explain, top=args.top))
    if refused:  # the recall fell back to extractive and says so; the exit status says it too
        print(f"{PROG}: error: {refused}", file=sys.stderr)
        return 1
    return 0


def _repo_config(args: argparse.Namespace, retrieval: RetrievalConfig) -> RepoConfig:
    """--config as a whole (recall and llm sections too), with the effective retrieval section."""
    from adr_review.entrypoints.commands.common import repo_config

    return repo_config(getattr(args, "config", None)).model_copy(update={"retrieval": retrieval})


def _text_source(text: str) -> tuple[str, bytes, bool]:
    if not text.strip():
        raise ValueError("--text is empty: give the proposal's text, or --file")
    return "(text)", text.encode("utf-8"), False


def _recall(
    args: argparse.Namespace, proposal: Adr, index: Any, folder: list[Adr], repo: RepoConfig
) -> tuple[RecallResult, str | None]:
    """The recall, and what to say when the provider refused the credentials (then exit 1)."""
    from adr_review.pipeline.adr.recall import run_recall
    from adr_review.process_env import process_settings
    from adr_review.prompts import packaged

    switches = process_settings(os.environ)  # without pydantic-settings: an offline recall needs two values
    llm = None
    if not args.offline and switches.anthropic_api_key:
        from adr_review.adapters.llm import make_llm
        from adr_review.config import Settings
        from adr_review.entrypoints.llm_auth import AuthWatch

        settings = Settings()
        made = make_llm(settings, repo)
        llm = AuthWatch(made) if made is not None else None
    recall = run_recall(
        proposal, index, folder, llm, config=repo, enabled=switches.recall_enabled, prompts=packaged()
    )
    if llm is None or not llm.refused:
        return recall, None
    from adr_review.adapters.llm import provider_of
    from adr_review.entrypoints.llm_auth import refused_message

    return recall, refused_message(llm.refused, provider_of(settings, repo), "cli")


def _retrieval_of(recall: RecallResult) -> RetrievalResult:
    from adr_review.core.results import RetrievalResult

    diag = recall.diagnostics
    return RetrievalResult(recall.candidates, diag.get("retrieval_empty_reason"), diag.get("retrieval", {}))


def recall_to_json(recall: RecallResult) -> dict[str, Any]:
    """The recall part of --json: mode, verified citations, drops by reason, usage, errors."""
    return {
        "mode": recall.mode,
        "citations": [asdict(c) for c in recall.citations],
        "empty_reason": recall.empty_reason,
        "dropped": dict(recall.dropped),
        "usage": _jsonable(asdict(recall.usage)),
        "errors": [f"{e.node}: {e.message}" for e in recall.errors],
    }


def format_citations(recall: RecallResult) -> str:
    lines = [f"recall ({recall.mode}): {len(recall.citations)} citation(s)"]
    if not recall.citations:
        lines[0] += f" - {recall.empty_reason or 'none'}"
    for c in recall.citations:
        successor = f" -> superseded by {c.superseded_by}" if c.superseded_by else ""
        lines.append(f"  [{c.relevance}] {c.adr_id} {c.title} [{c.status}]{successor} ({c.path})")
        lines.append(
            f'      "{c.relevance_reason}"' + (" (from this proposal)" if c.quoted_from == "proposal" else "")
        )
    if recall.dropped:
        lines.append("  dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(recall.dropped.items())))
    u = recall.usage
    if u.calls:
        lines.append(
            f"  usage: {u.model} in {u.input_tokens} out {u.output_tokens} cache r/w "
            f"{u.cache_read_tokens}/{u.cache_write_tokens} ${u.cost_usd:.4f} {u.latency_s:.1f}s"
        )
    lines.extend(f"  error: {e.message}" for e in recall.errors)
    return "\n".join(lines) + "\n"


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)
