"""The critics' and the Judge's answers: their one definition, at the LLM boundary.

Each model is both the contract the model is given and the tolerant reading of what it sent.
The contract, prompts/blindspot-*/output_schema.json, is generated from these models
(app/adr_review/pipeline/answer_schema.py) and checked on the raw answer first (call_prompt); then these models
coerce and normalise the values (enums, FMEA scores, critic names) so nothing downstream trusts a raw
label. The limits the model is held to (lengths, counts) are schema-only (WithJsonSchema, json_schema_extra):
the schema already enforced them on the raw text, and one title that is blank after stripping must not
fail a whole critic here. Each answer converts itself into core Findings. Models carry no docstrings:
pydantic would send them to the model as schema descriptions (comments instead).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.json_schema import JsonDict

from adr_review.core.findings import (
    clamp_confidence,
    clamp_score,
    normalize_actionability,
    normalize_category,
    normalize_severity,
    normalize_source,
    premortem_severity,
    risk_priority,
)
from adr_review.core.results import Actionability, Finding, Severity
from adr_review.pipeline.answer_schema import OPTIONAL


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _string(**limits: int) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", **limits})


Text = Annotated[str, BeforeValidator(_text)]
Title = Annotated[Text, _string(minLength=1, maxLength=300)]
Quote = Annotated[Text, _string(minLength=1, maxLength=600)]
SectionName = Annotated[Text, _string(maxLength=200)]
Gap = Annotated[Text, _string(minLength=1, maxLength=1500)]
Prose = Annotated[Text, _string(maxLength=3000)]
Action = Annotated[Text, _string(maxLength=2000)]
TopicKey = Annotated[Text, _string(maxLength=120)]
NonEmpty = Annotated[Text, _string(minLength=1)]
# Labels the code normalises: the contract asks for a string, not the enum the code maps it onto.
NormSeverity = Annotated[Severity, BeforeValidator(normalize_severity), _string()]
NormActionability = Annotated[Actionability, BeforeValidator(normalize_actionability), _string()]
Category = Annotated[str | None, BeforeValidator(normalize_category), _string()]
Score = Annotated[int, BeforeValidator(clamp_score), WithJsonSchema({"type": "number"})]
Count = Annotated[int, WithJsonSchema({"type": "integer", "minimum": 0})]
Confidence = Annotated[
    float | None,
    BeforeValidator(clamp_confidence),
    WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1}),
]
Sources = Annotated[
    list[str],
    BeforeValidator(_as_list),
    WithJsonSchema({"type": "array", "items": {"type": "string"}, "minItems": 1}),
]

SEVERITY_HELP = "critical | high | medium | low (normalised in code)"
ACTIONABILITY_HELP = "block | revise_adr | add_to_risks | monitor (normalised in code)"
QUOTE_HELP = (
    "A verbatim excerpt of the ADR this concerns, copied character for character from ONE sentence, "
    "list item, heading or table cell as rendered (checked in code; never joined, never paraphrased)."
)
SECTION_HELP = "The heading of the ADR section the quote stands under, as written in the ADR."
# The anchors straddle the default threshold (blindspot.min_confidence 0.5): "likely" is shown, a
# hunch is held back. The prompt states the same three (tests/pipeline/test_blindspot_prompts.py).
CONFIDENCE_ANCHORS = (
    (0.9, "the quoted passage itself shows the gap"),
    (0.6, "likely, but the ADR may handle it elsewhere"),
    (0.3, "a plausible hunch"),
)
CONFIDENCE_HELP = (
    "0-1: how sure you are this is a real, unaddressed problem of THIS ADR ("
    + "; ".join(f"{v} {what}" for v, what in CONFIDENCE_ANCHORS)
    + "). Below the repo's threshold (0.5 by default) it is held back; a finding without one is shown as unscored."
)
GAP_HELP = "What is missing, wrong or unhandled there, in your own words (not a quote)."


# How many items each critic may give: what its prompt asks for, its output_schema.json's maxItems and
# the code's cap (meta.yaml may lower the cap, never raise it past the schema).
MAX_COUNTER_ARGUMENTS = 5
MAX_SCENARIOS = 8
MAX_ANALOGIES = 3


def _items(lo: int | None = None, hi: int | None = None) -> JsonDict:
    """Schema-only bounds on an answer's list (the code caps what it shows itself)."""
    return {k: v for k, v in (("minItems", lo), ("maxItems", hi)) if v is not None}


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class CounterArgument(_Answer):
    perspective: Text = Field("", description="id of the perspective it comes through")
    title: Title
    argument: Prose = ""
    quote: Quote = Field(description=QUOTE_HELP)
    section: SectionName = Field("", description=SECTION_HELP)
    gap: Gap = Field(description=GAP_HELP)
    severity: NormSeverity = Field("medium", description=SEVERITY_HELP)
    actionability: NormActionability = Field(
        "revise_adr", description=ACTIONABILITY_HELP, json_schema_extra=OPTIONAL
    )
    suggested_action: Action = ""
    dedupe_group: TopicKey = ""


class DevilsAdvocateAnswer(_Answer):
    model_config = ConfigDict(title="Devil's Advocate answer")
    conclusion: Text = Field("", description="The proposal's conclusion being attacked, in one sentence.")
    counter_arguments: list[CounterArgument] = Field(json_schema_extra=_items(1, MAX_COUNTER_ARGUMENTS))

    def findings(
        self, limit: int = MAX_COUNTER_ARGUMENTS, drawn: tuple[str, ...] = ()
    ) -> tuple[Finding, ...]:
        """drawn: the perspective ids the critic was given; a perspective it names outside them is None."""
        return tuple(
            replace(
                _finding(c, ("devils_advocate",), c.severity), perspective=_drawn_id(c.perspective, drawn)
            )
            for c in self.counter_arguments[:limit]
        )


def _drawn_id(value: str, drawn: tuple[str, ...]) -> str | None:
    """The model's perspective label as one of the drawn ids (case and `-`/space folded), else None."""
    key = value.strip().casefold().replace("-", "_").replace(" ", "_")
    return key if key in drawn else None


class PremortemScenario(_Answer):
    category: Category = Field(None, description="technical | operational | business_regulatory | cognitive")
    title: Title
    scenario: Prose = ""
    quote: Quote = Field(description=QUOTE_HELP)
    section: SectionName = Field("", description=SECTION_HELP)
    gap: Gap = Field(description=GAP_HELP)
    severity_score: Score = Field(3, description="FMEA severity 1-5")
    probability: Score = Field(3, description="FMEA probability 1-5")
    impact: Score = Field(3, description="FMEA impact 1-5")
    # The model's own product, asked for as a self-check; the code recomputes it (risk_priority).
    stated_risk_priority: Annotated[float | None, WithJsonSchema({"type": "number"})] = Field(
        None,
        alias="risk_priority",
        description="severity_score x probability x impact",
        json_schema_extra=OPTIONAL,
    )
    actionability: NormActionability = Field("add_to_risks", json_schema_extra=OPTIONAL)
    suggested_action: Action = ""
    dedupe_group: TopicKey = ""

    @property
    def risk_priority(self) -> int:
        return risk_priority(self.severity_score, self.probability, self.impact)


class PremortemAnswer(_Answer):
    model_config = ConfigDict(title="Pre-mortem answer")
    failure_story: Text = Field("", description="Two or three sentences: how it all went wrong.")
    scenarios: list[PremortemScenario] = Field(json_schema_extra=_items(1, MAX_SCENARIOS))

    def findings(self, thresholds: dict[str, float] | None = None) -> tuple[Finding, ...]:
        return tuple(
            _finding(
                s,
                ("premortem",),
                premortem_severity(s.severity_score, s.probability, s.impact, thresholds),
                s.category,
            )
            for s in self.scenarios[:MAX_SCENARIOS]
        )

    @property
    def categories(self) -> tuple[str | None, ...]:
        return tuple(s.category for s in self.scenarios)


class DomainAnalogy(_Answer):
    domain: NonEmpty
    analogous_decision: Text = ""
    failures: list[Text] = Field(default_factory=list)
    successes: list[Text] = Field(default_factory=list)
    title: Title
    lesson: Prose = Field("", json_schema_extra=OPTIONAL)
    quote: Quote = Field(description=QUOTE_HELP)
    section: SectionName = Field("", description=SECTION_HELP)
    gap: Gap = Field(description=GAP_HELP)
    severity: NormSeverity = "medium"
    actionability: NormActionability = Field("monitor", json_schema_extra=OPTIONAL)
    suggested_action: Action = ""
    dedupe_group: TopicKey = ""


class AdjacentDomainAnswer(_Answer):
    model_config = ConfigDict(title="Adjacent Domain answer")
    abstracted_decision: NonEmpty = Field(description="The core decision, stripped of its domain.")
    knowledge_basis: Text = Field(
        "", description="Where the cases come from: model knowledge, not live search."
    )
    analogies: list[DomainAnalogy] = Field(json_schema_extra=_items(1, MAX_ANALOGIES))

    def findings(self, limit: int = MAX_ANALOGIES) -> tuple[Finding, ...]:
        return tuple(_finding(a, ("adjacent_domain",), a.severity) for a in self.analogies[:limit])


class JudgedFinding(_Answer):
    source: Sources = Field(description="devils_advocate | premortem | adjacent_domain")
    title: Title
    severity: NormSeverity = Field("medium", description=SEVERITY_HELP)
    actionability: NormActionability = Field("add_to_risks", description=ACTIONABILITY_HELP)
    quote: Quote = Field(description=QUOTE_HELP)
    section: SectionName = Field("", description=SECTION_HELP)
    gap: Gap = Field(description=GAP_HELP)
    suggested_action: Action = ""
    dedupe_group: TopicKey = ""
    merged_ids: list[Text] = Field(default_factory=list, json_schema_extra=OPTIONAL)
    # Optional in the contract: a finding without one is shown as unscored, not dropped as malformed.
    confidence: Confidence = Field(None, description=CONFIDENCE_HELP, json_schema_extra=OPTIONAL)

    def finding(self, allowed_sources: tuple[str, ...]) -> Finding:
        """Critic names are mapped to node names; a name the Judge made up becomes "judge"."""
        names = [normalize_source(s) for s in self.source]
        sources = tuple(dict.fromkeys(n for n in names if n in allowed_sources)) or ("judge",)
        return replace(_finding(self, sources, self.severity), confidence=self.confidence)


class ExcludedFinding(_Answer):
    id: Text = Field(description="The critic finding's id, as given (e.g. pm-2).")
    quote: Quote = Field(
        description="The ADR passage that already covers it, verbatim from ONE sentence or list item of its "
        "Risks, Consequences, Alternatives / Options, Decision or Rollback, and about the same thing as the "
        "finding (checked in code: any other passage, e.g. of the Context, puts the finding back)."
    )


class SeverityCounts(_Answer):
    critical: Count = 0
    high: Count = 0
    medium: Count = 0
    low: Count = 0


class JudgeAnswer(_Answer):
    model_config = ConfigDict(title="Judge answer")
    findings: list[JudgedFinding]
    excluded: list[ExcludedFinding] = Field(
        default_factory=list,
        description="Findings dropped because the ADR already covers them, each with the covering passage.",
        json_schema_extra=OPTIONAL,
    )
    # The Judge's own tally, asked for as a self-check; the comment counts what the guards kept.
    total_count_by_severity: SeverityCounts = Field(default_factory=SeverityCounts)
    self_assessment: Prose = ""


def _covers(value: Any) -> Any:
    return value.strip().casefold() if isinstance(value, str) else value


class CoverCheckAnswer(_Answer):
    # The independent check of an unsure Judge exclusion (app/adr_review/pipeline/adr/blindspot_cover.py):
    # only "yes" keeps the exclusion; any other label fails validation, which shows the finding.
    model_config = ConfigDict(title="Cover check answer")
    covers: Annotated[
        Literal["yes", "no", "partly"],
        BeforeValidator(_covers),
        WithJsonSchema({"type": "string", "enum": ["yes", "no", "partly"]}),
    ] = Field(
        description="yes: the passage itself handles this risk | no: it does not | partly: only in part"
    )
    reason: Annotated[Text, _string(minLength=1, maxLength=1000)] = Field(
        description="One or two sentences: what in the passage handles the risk, or what it leaves out."
    )


def _finding(
    item: CounterArgument | PremortemScenario | DomainAnalogy | JudgedFinding,
    source: tuple[str, ...],
    severity: Severity,
    category: str | None = None,
) -> Finding:
    """The fields every critic item and judged finding carry, as a core Finding."""
    return Finding(
        source=source,
        title=item.title,
        severity=severity,
        actionability=item.actionability,
        quote=item.quote,
        section=item.section,
        gap=item.gap,
        suggested_action=item.suggested_action,
        dedupe_group=item.dedupe_group,
        category=category,
    )
