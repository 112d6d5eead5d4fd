"""`adr-review blind-spots --file ADR [--adr-dir DIR] [--json]`: recall, then the blind-spot DAG, on one ADR.

Needs an API key (the critics are model calls); without one it says so and exits 2. Recall runs over
--adr-dir (default: the ADR's own folder) when the index adapter is available, and says so when not.
Advisory like the rest: a run that degraded still exits 0; only unusable input or setup exits non-zero
(a key the model provider refuses: 1, after the report).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adr_review.entrypoints.commands.common import folder_relative, repo_config, setup_logging

if TYPE_CHECKING:
    from adr_review.config import RepoConfig, Settings
    from adr_review.core.adr import Adr
    from adr_review.core.results import BlindSpotResult, RecallResult
    from adr_review.pipeline.ports import LlmPort

NO_KEY_MESSAGE = (
    "adr-review blind-spots: no Anthropic API key. The blind-spot critics are model calls: set "
    "ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a proxy). `adr-review recall` works without a key."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file", required=True, type=Path, help="the ADR to examine (markdown)")
    parser.add_argument(
        "--adr-dir",
        type=Path,
        default=None,
        help="folder of past ADRs for recall (default: the ADR's folder)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--seed", type=int, default=None, help="perspective draw seed (default: from the ADR's content hash)"
    )
    parser.add_argument("--adjacent-domain", action="store_true", help="also run the Adjacent Domain critic")
    parser.add_argument("--max-findings", type=int, default=None, help="findings shown (default: config, 5)")
    parser.add_argument("--config", type=Path, default=None, help="repo config YAML (.github/adr-review.yml)")
    parser.add_argument(
        "--store",
        "--index-dir",
        dest="index_dir",
        type=Path,
        default=None,
        help="the store folder, as for `index` and `recall`: the ADR index lives there "
        "(default: .adr-review/ or ADR_REVIEW_STORE_DIR)",
    )


def run(args: argparse.Namespace) -> int:
    setup_logging()
    from adr_review.config import Settings

    settings = Settings()
    if not settings.anthropic_api_key:
        print(NO_KEY_MESSAGE, file=sys.stderr)
        return 2
    try:
        config = repo_config(args.config)
    except ValueError as exc:
        print(f"adr-review blind-spots: {exc}", file=sys.stderr)
        return 2
    updates: dict[str, Any] = {}
    if args.adjacent_domain:
        updates["adjacent_domain"] = True
    if args.max_findings is not None:
        updates["max_findings"] = args.max_findings
    if updates:
        config = config.model_copy(update={"blindspot": config.blindspot.model_copy(update=updates)})

    from adr_review.adapters.adr_files import bounded_bytes
    from adr_review.core.adr import AdrParseError, parse_adr
    from adr_review.core.adr_paths import printable_path

    file: Path = args.file
    adr_dir: Path = args.adr_dir or file.parent
    rel = folder_relative(file, adr_dir) or printable_path(file.name)
    try:
        adr = parse_adr(rel, bounded_bytes(file))
    except OSError as exc:
        print(f"adr-review blind-spots: cannot read {file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except AdrParseError as exc:
        print(f"adr-review blind-spots: {file}: {exc.reason}", file=sys.stderr)
        return 2
    except ValueError as exc:  # too large to read
        print(f"adr-review blind-spots: {exc}", file=sys.stderr)
        return 2

    from adr_review.adapters.llm import make_llm, provider_of
    from adr_review.entrypoints.llm_auth import AuthWatch, refused_message

    made = make_llm(settings, config)
    assert made is not None  # the key was checked above
    llm = AuthWatch(made)
    recall, notes = _recall(adr, adr_dir, args.index_dir, llm, config, settings)
    blind = _blindspots(adr, recall, llm, config, args.seed)
    if args.json:
        print(json.dumps(_as_json(adr, recall, blind, notes), ensure_ascii=False, indent=2))
    else:
        print(format_report(adr, recall, blind, notes))
    if llm.refused:
        message = refused_message(llm.refused, provider_of(settings, config), "cli")
        print(f"adr-review blind-spots: error: {message}", file=sys.stderr)
        return 1
    return 0


def _recall(
    adr: Adr, adr_dir: Path, index_dir: Path | None, llm: LlmPort, config: RepoConfig, settings: Settings
) -> tuple[RecallResult | None, list[str]]:
    """Recall over the folder's (incrementally synced) index, or None with the reason when it cannot open."""
    from adr_review.pipeline.adr.recall import run_recall
    from adr_review.prompts import packaged

    notes: list[str] = []
    try:
        from adr_review.adapters.index_open import ensure_synced, open_index_for

        index = open_index_for(adr_dir, index_dir or settings.store_dir, config=config.retrieval)
        synced = ensure_synced(index, adr_dir)
    except Exception as exc:  # advisory: no index means no citations, not no critics
        notes.append(f"recall skipped: the ADR index could not be opened ({type(exc).__name__}: {exc})")
        return None, notes
    notes.extend(f"not read: {e}" for e in synced.report.errors)
    recall = run_recall(
        adr, index, synced.adrs, llm, config=config, enabled=settings.recall_enabled, prompts=packaged()
    )
    return recall, notes


def _blindspots(
    adr: Adr, recall: RecallResult | None, llm: LlmPort, config: RepoConfig, seed: int | None
) -> BlindSpotResult:
    from adr_review.pipeline.adr.blindspot import run_blindspots
    from adr_review.pipeline.structured import StepOverrides
    from adr_review.prompts import packaged

    return run_blindspots(
        adr,
        recall.citations if recall else (),
        llm,
        config=config.blindspot,
        seed=seed if seed is not None else int(adr.content_hash[:8], 16),
        prompts=packaged(),
        overrides={name: StepOverrides.from_config(config.llm, name) for name in config.llm.prompts},
        language=config.language if config.language in ("en", "ja") else None,
    )


def _as_json(
    adr: Adr, recall: RecallResult | None, blind: BlindSpotResult, notes: list[str]
) -> dict[str, Any]:
    from adr_review.core.serde import blindspots_to_dict, recall_to_dict, to_dict

    recall_data = recall_to_dict(recall) if recall else None
    if recall_data:
        for cand in recall_data.get("candidates", []):
            cand.get("adr", {}).update(text="", sections={})
    from adr_review.core.results import Usage

    usage = blind.usage + (recall.usage if recall else Usage())
    return {
        "adr": {"path": adr.path, "id": adr.adr_id, "title": adr.title, "language": adr.language},
        "recall": recall_data,
        "blindspots": blindspots_to_dict(blind),
        "usage": to_dict(usage),
        "notes": notes,
    }


def format_report(adr: Adr, recall: RecallResult | None, blind: BlindSpotResult, notes: Sequence[str]) -> str:
    """A plain-text report for a terminal (the PR comment is rendered elsewhere, from templates)."""
    lines = [f"{adr.adr_id}: {adr.title}", ""]
    if recall is None:
        lines.append("Recall: not run")
    else:
        lines.append(f"Recall ({recall.mode}): {len(recall.citations)} citation(s)")
        for c in recall.citations:
            lines.append(f"  - {c.adr_id} {c.title} [{c.relevance}] — {c.relevance_reason}")
        if recall.empty_reason:
            lines.append(f"  (none: {recall.empty_reason})")
    lines.append("")
    status = blind.status + (f" ({blind.skipped_reason})" if blind.skipped_reason else "")
    lines.append(f"Blind spots: {status}")
    weights = blind.perspective_weights
    drawn = [f"{p} (weight {weights[p]})" if p in weights else p for p in blind.selected_perspectives]
    lines.append(f"  perspectives: {', '.join(drawn) or '-'} (seed {blind.seed})")
    counts = ", ".join(f"{k} {v}" for k, v in blind.total_count_by_severity.items())
    held = [
        f"{n} {why}"
        for n, why in (
            (blind.low_confidence_count, "below the confidence threshold"),
            (blind.omitted_count, "beyond the cap"),
        )
        if n
    ]
    lines.append(f"  findings: {counts}" + (f"; not shown: {', '.join(held)}" if held else ""))
    for f in blind.findings:
        lines.append("")
        lines.append(f"  [{f.severity}/{f.actionability}] {f.title}  ({', '.join(f.source)})")
        lines.append(f"      quote ({f.section or '?'}): {f.quote}")
        lines.append(f"      gap: {f.gap}")
        if f.suggested_action:
            lines.append(f"      suggested: {f.suggested_action}")
    for f in blind.unverified:
        extra = f" {', '.join(f.unknown_ids)}" if f.unknown_ids else ""
        lines.append(f"  UNVERIFIED ({f.unverified}{extra}): {f.title}  ({', '.join(f.source)})")
    for x in blind.exclusions:
        lines.append(f"  already covered ({x.by}): {x.title} <- {x.quote}")
    if blind.coverage_gaps:
        lines.append(f"  pre-mortem did not cover: {', '.join(blind.coverage_gaps)}")
    dropped = {k: v for k, v in blind.dropped.items() if v}
    if dropped:
        lines.append("  dropped: " + ", ".join(f"{k} {v}" for k, v in dropped.items()))
    if blind.self_assessment:
        lines.extend(["", f"  judge: {blind.self_assessment}"])
    for e in blind.errors:
        lines.append(f"  error in {e.node}: {e.message}")
    lines.append("")
    for node, u in blind.usage_by_node.items():
        lines.append(
            f"  {node}: {u.model} in {u.input_tokens} / out {u.output_tokens} tokens, "
            f"${u.cost_usd:.4f}, {u.latency_s:.1f}s"
        )
    from adr_review.core.results import Usage

    total = blind.usage + (recall.usage if recall else Usage())
    lines.append(f"  total: {total.calls} call(s), ${total.cost_usd:.4f}")
    lines.extend(f"note: {n}" for n in notes)
    return "\n".join(lines)
