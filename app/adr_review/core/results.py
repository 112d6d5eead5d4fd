"""Value types that cross stage boundaries: retrieval, recall, blind-spot findings, usage, Review.

Frozen dataclasses, no behaviour beyond small derived properties; every stage returns one of these and
the renderer and the checkpoint store consume them (see `to_dict` / `from_dict` in app/adr_review/core/serde.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from adr_review.core.adr import Adr

EmptyReason = Literal[
    "disabled",
    "empty_input",
    "empty_index",
    "embedding_failed",
    "no_candidates",
    "none_qualified",
    "llm_failed",
    "all_dropped_by_verification",
    "none_relevant",  # recall: the model saw qualified candidates and cited none
]
Relevance = Literal["high", "med", "low"]
Severity = Literal["critical", "high", "medium", "low"]
Actionability = Literal["block", "revise_adr", "add_to_risks", "monitor"]
RecallMode = Literal["llm", "extractive", "disabled"]
# Where a citation's verified reason was found: the cited ADR, or (only there) the proposal itself.
QuoteSource = Literal["proposal", "candidate"]


@dataclass(frozen=True)
class Candidate:
    """One ADR proposed by hybrid retrieval, with every score that explains its rank."""

    adr: Adr
    dense: float | None  # cosine similarity of the best chunk; None when embeddings failed
    bm25: float
    bm25_rel: float  # bm25 / best bm25 in this query
    fused: float
    qualified: bool
    why: str  # human-readable reason for qualified / not
    title_match: float = 0.0  # IDF-weighted share of the candidate's title terms found in the query
    cross_language: bool = False  # written in another language than the query
    cross_language_evidence: str | None = None  # its passage the cross-language scorer matched best
    coverage: float = 0.0  # IDF-weighted share of the query's content terms it contains
    rare_idf: float = 0.0  # IDF mass of the rare terms it shares with the query
    rare_count: int = 0  # terms it alone in the pool shares with the query
    evidence: float | None = None  # calibrated probability of being related (app/adr_review/core/evidence.py)


@dataclass(frozen=True)
class RetrievalResult:
    candidates: tuple[Candidate, ...]
    empty_reason: EmptyReason | None
    diagnostics: Mapping[str, Any]  # embedding name, embedding_failed, counts, timings


@dataclass(frozen=True)
class Usage:
    """What model calls cost, summed over calls. The tuples are what a reader must be told about them:

    unpriced_models: models that answered but have no price in `llm.prices`; `cost_usd` leaves their
    calls out, so the cost is a lower bound ("cost unknown"), never a silent $0.
    temperature_not_sent: (prompt, configured value) for every temperature the adapter did not send
    because the API or the model rejects sampling parameters.
    fallbacks: (model asked for, model that answered) when the first was overloaded (HTTP 529 after the
    SDK's retries) and the configured fallback model answered instead.
    """

    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    calls: int = 0
    unpriced_models: tuple[str, ...] = ()
    temperature_not_sent: tuple[tuple[str, float], ...] = ()
    fallbacks: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # Callers rebuild Usage from JSON (lists); keep the fields hashable, sorted and unique.
        object.__setattr__(self, "unpriced_models", _union(self.unpriced_models))
        object.__setattr__(self, "temperature_not_sent", _union(self.temperature_not_sent))
        object.__setattr__(self, "fallbacks", _union(self.fallbacks))

    @classmethod
    def stored(cls, data: Any) -> Usage:
        """A Usage read back from a stage memo: unknown keys ignored, anything unreadable empty."""
        if not isinstance(data, Mapping):
            return cls()
        names = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in names})
        except TypeError:
            return cls()

    @property
    def cost_known(self) -> bool:
        """False when some call's model has no price: `cost_usd` is then only what the priced calls cost."""
        return not self.unpriced_models

    def __add__(self, other: Usage) -> Usage:
        models = ",".join(sorted({m for m in (self.model, other.model) for m in m.split(",") if m}))
        return Usage(
            model=models,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            latency_s=self.latency_s + other.latency_s,
            cost_usd=self.cost_usd + other.cost_usd,
            calls=self.calls + other.calls,
            unpriced_models=self.unpriced_models + other.unpriced_models,
            temperature_not_sent=self.temperature_not_sent + other.temperature_not_sent,
            fallbacks=self.fallbacks + other.fallbacks,
        )


def _union(items: Any) -> tuple[Any, ...]:
    return tuple(sorted({tuple(i) if isinstance(i, list) else i for i in items}))


# The message of a stage that crashed (a bug, not the model): the comment says only that, in its
# language, with the run id; the exception goes to the log. A store or index outage never gets here
# (InfrastructureError fails the run instead).
INTERNAL_ERROR = "internal_error"


@dataclass(frozen=True)
class StageError:
    node: str  # "recall", "devils_advocate", "premortem", "judge", ...
    message: str  # shown in the comment; INTERNAL_ERROR for a crash (its details are in the log only)

    MAX_CHARS = 1000  # a model's 400 body or a traceback must not fill the store and the comment

    def __post_init__(self) -> None:
        if len(self.message) > self.MAX_CHARS:
            object.__setattr__(self, "message", self.message[: self.MAX_CHARS - 1] + "…")


@dataclass(frozen=True)
class Citation:
    adr_id: str
    path: str
    title: str
    status: str
    relevance: Relevance
    relevance_reason: str
    superseded_by: str | None = None
    # Where the reason is verbatim; None in results stored before it was kept (not known, not shown).
    quoted_from: QuoteSource | None = None


@dataclass(frozen=True)
class RecallResult:
    mode: RecallMode
    citations: tuple[Citation, ...]
    candidates: tuple[Candidate, ...]
    empty_reason: EmptyReason | None
    dropped: Mapping[str, int]  # reason -> count
    usage: Usage
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    errors: tuple[StageError, ...] = ()


# Why a finding is shown as unverified (app/adr_review/core/findings.py verify_findings).
Unverified = Literal["quote_not_found", "quote_too_short", "no_quote", "unknown_adr"]


@dataclass(frozen=True)
class Finding:
    source: tuple[str, ...]  # which critics raised it
    title: str
    severity: Severity
    actionability: Actionability
    quote: str  # the ADR passage it concerns, verbatim (the code checks it like a citation reason)
    section: str  # the section it concerns: once verified, the heading the quote stands under
    gap: str  # what is missing, wrong or unhandled there
    suggested_action: str
    dedupe_group: str
    category: str | None = None  # pre-mortem category when known
    perspective: str | None = None  # Devil's Advocate: the drawn perspective id it came through
    unverified: Unverified | None = None  # None: the quote verified and every ADR it names is known
    unknown_ids: tuple[str, ...] = ()  # ADR ids it names that are not among the ADRs it was shown
    confidence: float | None = None  # the Judge's 0-1 confidence; None: un-judged (never held back for it)


@dataclass(frozen=True)
class Exclusion:
    """A critic finding left out because the ADR already covers it, with the passage that does."""

    title: str  # the critic finding's title
    quote: str  # the ADR passage that covers it, verified
    section: str
    by: Literal["judge", "code"]  # the Judge said so (and named the passage), or the code guard found it
    source: tuple[str, ...] = ()
    covered_in: str = ""  # the canonical section the passage stands in (risks, consequences, ...)


@dataclass(frozen=True)
class BlindSpotResult:
    status: Literal["judged", "unjudged", "skipped", "disabled"]
    findings: tuple[Finding, ...]  # verified, after caps: the shown ones
    omitted_count: int  # findings beyond the display cap
    total_count_by_severity: Mapping[str, int]
    self_assessment: str
    selected_perspectives: tuple[str, ...]
    seed: int
    coverage_gaps: tuple[str, ...]  # pre-mortem categories not covered
    errors: tuple[StageError, ...]
    usage_by_node: Mapping[str, Usage]
    skipped_reason: str | None = None
    # perspective id -> its draw weight for this ADR (app/adr_review/core/perspectives.py; {} in older results)
    perspective_weights: Mapping[str, int] = field(default_factory=dict)
    # reason -> count of findings not shown for a reason other than the cap: "merged_duplicates",
    # "covered_by_adr" (code check), "judge_excluded_as_covered" (the Judge, its passage verified),
    # "judge_exclusion_unverified" (the Judge named no real passage or no finding it was shown: put back),
    # "judge_exclusion_not_covering" / "judge_exclusion_off_subject" (a real passage, but outside the
    # sections that can cover a risk, or about something else: put back), "judge_dropped" (critic
    # findings the Judge neither merged into a finding nor claimed as covered),
    # "unverified" (quote not found or an unknown ADR named: listed apart, see `unverified`)
    dropped: Mapping[str, int] = field(default_factory=dict)
    unverified: tuple[Finding, ...] = ()  # findings whose quote or ADR ids did not verify, labelled
    exclusions: tuple[Exclusion, ...] = ()  # "already covered by the ADR", each with its passage
    low_confidence_count: int = 0  # judged findings held back below blindspot.min_confidence
    # The critic findings whose quote verified (what the Judge was shown), before the Judge and the
    # guards: "no blind spots found" is said only when this is 0 and nothing is listed as unverified.
    raised_count: int = 0
    # (characters the critics and the Judge were sent, the ADR's length) when the ADR was longer than
    # what they are sent (app/adr_review/pipeline/adr/blindspot_nodes.py MAX_ADR_CHARS): the comment says so.
    adr_cut: tuple[int, int] | None = None

    @property
    def usage(self) -> Usage:
        total = Usage()
        for u in self.usage_by_node.values():
            total = total + u
        return total


@dataclass(frozen=True)
class RunMeta:
    run_key: str
    mode: str  # recall mode + whether blind spots ran, for the footer
    models: tuple[str, ...]
    usage: Usage
    duration_s: float
    perspectives: tuple[str, ...]
    embedding: str
    reused_stages: tuple[str, ...] = ()  # stages served from checkpoints in this run (no new LLM call)


@dataclass(frozen=True)
class Review:
    """Everything one PR comment shows about one ADR."""

    adr_path: str  # repo-relative path of the reviewed ADR
    adr_id: str
    adr_title: str
    language: Literal["en", "ja"]
    recall: RecallResult | None
    blindspots: BlindSpotResult | None
    skipped: tuple[tuple[str, str], ...]  # (stage, reason) for what did not run or degraded
    meta: RunMeta
    error: str | None = None  # the ADR itself could not be reviewed (parse error, ...)
    adr_dir: str = ""  # repo-relative folder that the citations' paths are relative to (for links)


def internal_error(exc: BaseException) -> str:
    """What a comment, an annotation or the command line says of an unexpected failure: its kind,
    never its text (a database error, a path or a value read from an ADR does not belong in a public
    comment); the traceback goes to the log."""
    return f"internal error ({type(exc).__name__})"
