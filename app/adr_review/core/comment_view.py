"""Review -> the view model the comment templates print: plain values for trusted text (labels and
strings from templates/i18n/), `Untrusted` for everything from an ADR or a model.

The strings are passed in (one language's `strings` and `labels` tables), so this module only decides
what goes where; render.py loads the tables and the templates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from adr_review.core.comment_format import fmt_cost, fmt_duration, fmt_int, split_reason
from adr_review.core.feedback_boxes import checkbox, finding_ids
from adr_review.core.markdown_safe import Untrusted, clean, untrusted
from adr_review.core.results import (
    INTERNAL_ERROR,
    BlindSpotResult,
    Citation,
    Finding,
    QuoteSource,
    RecallResult,
    Review,
)

Strings = Mapping[str, str]  # one language's fixed strings
Labels = Mapping[str, Mapping[str, str]]  # one language's label tables: table -> key -> label

SEVERITIES = ("critical", "high", "medium", "low")
OPEN_SEVERITIES = frozenset({"critical", "high"})
MAX_LISTED = 10  # unverified findings and exclusions listed (each collapsed); the rest are counted
_QUOTE_LABEL = {"unknown_adr": "unverified_quote_found"}  # its quote is in the ADR; an id is not

# Per-field caps (characters of the raw text, before escaping).
CAPS = {
    "title": 200,
    "id": 60,
    "path": 300,
    "reason": 600,
    "finding_title": 240,
    "quote": 600,
    "section": 120,
    "gap": 1500,
    "action": 900,
    "assessment": 1200,
    "detail": 500,
    "error": 1500,
    "perspective": 80,
    "model": 80,
}


def _n(template: str, n: int, **kw: object) -> str:
    """Format with a count; "(s)" becomes the English plural ending (Japanese strings have none)."""
    return template.format(n=n, **kw).replace("(s)", "" if n == 1 else "s")


def _label(labels: Labels, table: str, key: str) -> str:
    return labels[table].get(key, key)


# --------------------------------------------------------------------------------------------------
# View model


@dataclass(frozen=True)
class Limits:
    keep_findings: int | None = None  # None: all shown findings
    size_trimmed: int = 0


def _citation_url(link_base: str | None, adr_dir: str, c: Citation) -> str | None:
    if link_base is None or not c.path:
        return None
    rel = "/".join(p for p in (adr_dir.strip("/"), c.path.lstrip("/")) if p)
    if not link_base and adr_dir.startswith("/"):  # a local folder outside the working directory
        rel = "/" + rel  # its absolute path: right from any working directory
    target = quote(clean(rel), safe="/")
    return f"{link_base.rstrip('/')}/{target}" if link_base else target


def _findings_by_severity(findings: Sequence[Finding]) -> list[Finding]:
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: order.get(f.severity, len(SEVERITIES)))


def _no_citations_text(recall: RecallResult | None, t: Strings, labels: Labels) -> str:
    reasons = labels["reason"]
    code: str | None = recall.empty_reason if recall else None
    if code == "embedding_failed" and recall is not None and not recall.candidates:
        code = "search_failed"  # nothing came back at all, not a keyword-only search
    if code and code in reasons:
        return t["no_citations_because"].format(reason=reasons[code])
    return t["no_citations"]


def _recall_mode_text(recall: RecallResult | None, t: Strings, labels: Labels) -> str | None:
    """The sub-line under the citations: what picked them, exactly what code checked (the id is a
    candidate; the reason is verbatim in the cited ADR or in this proposal), and that it did not
    check the relation itself."""
    if recall is None or recall.mode == "disabled":
        return None
    llm = recall.mode == "llm"
    if not llm:
        picked = t[
            "recall_mode_fallback"
            if recall.diagnostics.get("fallback_from") == "llm"
            else "recall_mode_extractive"
        ]
    elif recall.candidates:
        picked = _n(t["recall_mode_llm"], len(recall.candidates))
    else:
        picked = t["recall_mode_llm_plain"]
    sources = {c.quoted_from for c in recall.citations}
    parts = [picked, t["recall_checked"].format(where=_label(labels, "quote_source", _source_key(sources)))]
    if "proposal" in sources:
        parts.append(t["recall_proposal_llm" if llm else "recall_proposal_extractive"])
    parts.append(t["recall_not_checked_llm" if llm else "recall_not_checked_extractive"])
    return t["sentence_sep"].join(parts)


def _source_key(sources: set[QuoteSource | None]) -> str:
    """Which text the reasons are verbatim in: one (candidate / proposal), both (mixed), or unknown
    (a result stored before the source was kept)."""
    if None in sources or not sources:
        return "unknown"
    return "mixed" if len(sources) > 1 else str(next(iter(sources)))


def build_view(
    review: Review, lang: str, t: Strings, labels: Labels, link_base: str | None, limits: Limits
) -> dict[str, Any]:
    """The `r` the templates print for one review, in language `lang` (`t` and `labels` are its tables)."""
    recall = review.recall
    citations = []
    for c in recall.citations if recall else ():
        status_key = c.status if c.status in labels["status"] else ""
        citations.append(
            {
                "id": Untrusted(c.adr_id),
                "url": _citation_url(link_base, review.adr_dir, c),
                "title": Untrusted(c.title),
                "status": _label(labels, "status", status_key) if status_key else None,
                "raw_status": Untrusted(c.status),
                "successor": untrusted(c.superseded_by),
                "successor_text": labels["superseded_by"][""].split("{id}"),
                "relevance": _label(labels, "relevance", c.relevance),
                "relevance_key": c.relevance,
                "reason": Untrusted(c.relevance_reason),
                "from_proposal": c.quoted_from == "proposal",
            }
        )
    dropped = []
    if recall:
        for key, n in sorted(recall.dropped.items()):
            if n and key in labels["dropped"]:
                dropped.append(_n(labels["dropped"][key], n))

    bs = review.blindspots
    groups: list[dict[str, Any]] = []
    shown_total = 0
    omitted_cap = bs.omitted_count if bs else 0
    omitted_unsure = bs.low_confidence_count if bs else 0
    if bs is not None:
        ids = dict(zip(map(id, bs.findings), finding_ids(review.adr_path, bs.findings), strict=True))
        ordered = _findings_by_severity(bs.findings)
        if limits.keep_findings is not None:
            ordered = ordered[: limits.keep_findings]
        shown_total = len(ordered)
        number = 0
        for sev in SEVERITIES:
            items = []
            for f in ordered:
                if f.severity != sev:
                    continue
                number += 1
                items.append(
                    {
                        "n": number,
                        "title": Untrusted(f.title),
                        "action": _label(labels, "actionability", f.actionability),
                        "sources": t["list_sep"].join(_label(labels, "source", s) for s in f.source),
                        "category": _label(labels, "category", f.category) if f.category else None,
                        "quote": Untrusted(f.quote),
                        "section": untrusted(f.section or None),
                        "gap": untrusted(f.gap or None),
                        "suggested": Untrusted(f.suggested_action),
                        "id": ids[id(f)],
                        "checkbox": checkbox(ids[id(f)], t["adopted_box"].format(id=ids[id(f)])),
                        # judged, but the Judge gave it no confidence (or it is a critic finding put back)
                        "unscored": bs.status == "judged" and f.confidence is None,
                    }
                )
            if items:
                total = sum(1 for f in bs.findings if f.severity == sev)
                groups.append(
                    {
                        "key": sev,
                        "label": _label(labels, "severity", sev),
                        "open": sev in OPEN_SEVERITIES,
                        "items": items,
                        "count": str(len(items))
                        if len(items) == total
                        else t["count_partial"].format(shown=len(items), total=total),
                    }
                )
    critics = []
    if bs is not None:
        ran = sorted({s for f in bs.findings for s in f.source} | set(bs.usage_by_node))
        failed = {e.node for e in bs.errors}
        critics = [_label(labels, "source", s) for s in ran if s != "judge" and s not in failed]

    omitted_parts = []
    if omitted_unsure:
        omitted_parts.append(_n(t["omitted_confidence"], omitted_unsure))
    if omitted_cap:
        omitted_parts.append(_n(t["omitted_cap"], omitted_cap))
    if limits.size_trimmed:
        omitted_parts.append(_n(t["omitted_size"], limits.size_trimmed))
    omitted_text = (
        _n(
            t["findings_omitted"],
            omitted_unsure + omitted_cap + limits.size_trimmed,
            why="; ".join(omitted_parts),
        )
        if omitted_parts
        else None
    )

    skipped = []
    for stage, reason in review.skipped[:30]:
        code, detail = split_reason(reason)
        known = labels["reason"].get(code) if code else None
        skipped.append(
            {
                "stage": _label(labels, "stage", stage),
                "reason": known,
                "detail": Untrusted(detail if known else (detail or reason)),
            }
        )

    meta = review.meta
    usage = meta.usage
    tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    footer = {
        "recall": _label(labels, "mode_recall", recall.mode if recall else "none"),
        "blind": _label(labels, "mode_blind", bs.status if bs else "none"),
        "models": [Untrusted(m) for m in meta.models],
        "tokens": fmt_int(tokens, lang),
        "cache_read": fmt_int(usage.cache_read_tokens, lang) if usage.cache_read_tokens else None,
        "cost": fmt_cost(usage.cost_usd),
        # a model with no price: "cost unknown", never a silent $0 (the priced part is still shown)
        "unpriced": [Untrusted(m) for m in usage.unpriced_models],
        "cost_partial": bool(usage.unpriced_models) and usage.cost_usd > 0,
        "temperature_not_sent": [
            {"prompt": Untrusted(p), "value": f"{v:g}"} for p, v in usage.temperature_not_sent
        ],
        "fallbacks": [{"asked": Untrusted(a), "used": Untrusted(b)} for a, b in usage.fallbacks],
        "duration": fmt_duration(meta.duration_s),
        "perspectives": [Untrusted(p) for p in meta.perspectives],
        "embedding": untrusted(meta.embedding or None),
        "run_key": meta.run_key[:12],
        "reused": _n(t["footer_reused"], len(meta.reused_stages)) if meta.reused_stages else None,
    }
    severity_counts = {s: sum(1 for f in (bs.findings if bs else ()) if f.severity == s) for s in SEVERITIES}
    return {
        "t": t,
        "lang": lang,
        "path": Untrusted(review.adr_path),
        "adr_id": Untrusted(review.adr_id),
        "adr_title": Untrusted(review.adr_title),
        # a crash says only that, in the comment's language, with the run id: the details are in the log
        "error": (
            t["error_internal"].format(run=meta.run_key[:12])
            if review.error == INTERNAL_ERROR
            else untrusted(review.error)
        ),
        "error_hint": t["error_internal_hint"] if review.error == INTERNAL_ERROR else t["error_hint"],
        "recall": recall,
        "recall_mode_text": _recall_mode_text(recall, t, labels) if citations else None,
        "citations": citations,
        "dropped": "; ".join(dropped) if dropped else None,
        "no_citations_text": _no_citations_text(recall, t, labels),
        "blind": bs,
        "blind_ran": bs is not None and bs.status in ("judged", "unjudged"),
        "blind_intro": (
            _n(
                t["blind_intro_judged"] if bs.status == "judged" else t["blind_intro_unjudged"],
                len(bs.findings) + bs.omitted_count + bs.low_confidence_count,
                critics=t["list_sep"].join(critics) if critics else "—",
            )
            if bs is not None and bs.status in ("judged", "unjudged") and bs.findings
            else None
        ),
        "assessment": untrusted(bs.self_assessment) if bs and bs.self_assessment else None,
        "coverage": (
            t["blind_coverage"].format(
                items=t["list_sep"].join(_label(labels, "category", c) for c in bs.coverage_gaps)
            )
            if bs and bs.coverage_gaps
            else None
        ),
        "cut_note": (
            t["blind_cut"].format(read=fmt_int(bs.adr_cut[0], lang), total=fmt_int(bs.adr_cut[1], lang))
            if bs is not None and bs.adr_cut
            else None
        ),
        "groups": groups,
        "none_text": _none_text(bs, t),
        "judge_notes": _judge_notes(bs, t),
        "feedback_hint": t["feedback_hint"] if shown_total else None,
        "unverified": _unverified_view(bs, t, labels),
        "excluded": _excluded_view(bs, t, labels),
        "shown_total": shown_total,
        "severity_counts": severity_counts,
        "omitted_text": omitted_text,
        "skipped": skipped,
        "footer": footer,
        "caps": CAPS,
        "emoji": {"critical": "🔴", "high": "🟠", "medium": "🟡", "low": "⚪"},
        "relevance_emoji": {"high": "🟢", "med": "🔵", "low": "⚪"},
    }


def _none_text(bs: BlindSpotResult | None, t: Strings) -> str:
    """What an empty blind-spot section says: "none found" only when the critics raised nothing."""
    if bs is None:
        return t["blind_none"]
    raised = bs.raised_count + len(bs.unverified)
    return _n(t["blind_none_raised"], raised) if raised else t["blind_none"]


def _judge_notes(bs: BlindSpotResult | None, t: Strings) -> list[str]:
    """What the Judge left out and the code put back, counted (trusted strings, numbers only)."""
    if bs is None or bs.status != "judged":
        return []
    notes = []
    dropped = int(bs.dropped.get("judge_dropped", 0))
    if dropped:
        notes.append(_n(t["judge_dropped"], dropped, total=bs.raised_count))
    # judge_exclusion_*: the claims that did not hold, by why (judge_excluded_*: those that did)
    rejected = sum(int(n) for k, n in bs.dropped.items() if k.startswith("judge_exclusion_"))
    if rejected:
        notes.append(_n(t["exclusions_rejected"], rejected))
    return notes


def _more(n: int, t: Strings) -> str | None:
    return _n(t["listed_more"], n) if n > 0 else None


def _unverified_view(bs: BlindSpotResult | None, t: Strings, labels: Labels) -> dict[str, Any] | None:
    """Findings whose quote is not in the ADR (or that name an unknown ADR): listed apart, labelled."""
    if bs is None or not bs.unverified:
        return None
    items = [
        {
            "title": Untrusted(f.title),
            "why": _label(labels, "unverified", f.unverified or "quote_not_found"),
            "ids": untrusted(", ".join(f.unknown_ids) or None),
            "sources": t["list_sep"].join(_label(labels, "source", s) for s in f.source),
            "quote": untrusted(f.quote or None),
            "quote_label": t[_QUOTE_LABEL.get(f.unverified or "", "unverified_quote")],
            "gap": untrusted(f.gap or None),
        }
        for f in bs.unverified[:MAX_LISTED]
    ]
    total = max(len(bs.unverified), int(bs.dropped.get("unverified", 0)))
    return {"count": total, "items": items, "more": _more(total - len(items), t)}


def _excluded_view(bs: BlindSpotResult | None, t: Strings, labels: Labels) -> dict[str, Any] | None:
    """Findings the ADR already covers, each with the verified passage that covers it."""
    if bs is None or not bs.exclusions:
        return None
    items = [
        {
            "title": Untrusted(x.title),
            "quote": Untrusted(x.quote),
            "section": untrusted(x.section or None),
            "by": _label(labels, "excluded_by", x.by),
        }
        for x in bs.exclusions[:MAX_LISTED]
    ]
    per_section = Counter(x.covered_in for x in bs.exclusions if x.covered_in)
    sections = t["list_sep"].join(
        t["excluded_section_count"].format(section=_label(labels, "covering_section", k), n=n)
        for k, n in per_section.items()
    )
    confirmed = int(bs.dropped.get("judge_excluded_confirmed", 0))  # by the independent check
    return {
        "count": len(bs.exclusions),
        "sections": t["excluded_sections"].format(items=sections) if sections else None,
        "confirmed": _n(t["excluded_confirmed"], confirmed) if confirmed else None,
        "items": items,
        "more": _more(len(bs.exclusions) - len(items), t),
    }
