"""Typed views of the critics' and the Judge's answers, at the LLM boundary.

The JSON schema (prompts/blindspot-*/output_schema.json) checks the shape; these models then coerce
and normalise the values (enums, FMEA scores, critic names) so nothing downstream trusts a raw label.
Each answer converts itself into core Findings.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from app.core.findings import (
    clamp_score,
    normalize_actionability,
    normalize_category,
    normalize_severity,
    normalize_source,
    risk_priority,
    severity_from_rpn,
)
from app.core.results import Actionability, Finding, Severity

NormSeverity = Annotated[Severity, BeforeValidator(normalize_severity)]
NormActionability = Annotated[Actionability, BeforeValidator(normalize_actionability)]
Score = Annotated[int, BeforeValidator(clamp_score)]
Text = Annotated[str, BeforeValidator(lambda v: "" if v is None else str(v).strip())]


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class CounterArgument(_Answer):
    perspective: Text = ""
    title: Text
    argument: Text = ""
    evidence: Text
    severity: NormSeverity = "medium"
    actionability: NormActionability = "revise_adr"
    suggested_action: Text = ""
    dedupe_group: Text = ""


class DevilsAdvocateAnswer(_Answer):
    conclusion: Text = ""
    counter_arguments: list[CounterArgument]

    def findings(self, limit: int = 5) -> tuple[Finding, ...]:
        return tuple(_finding(c, ("devils_advocate",), c.severity) for c in self.counter_arguments[:limit])


class PremortemScenario(_Answer):
    category: Annotated[str | None, BeforeValidator(normalize_category)] = None
    title: Text
    scenario: Text = ""
    evidence: Text
    severity_score: Score = 3
    probability: Score = 3
    impact: Score = 3
    actionability: NormActionability = "add_to_risks"
    suggested_action: Text = ""
    dedupe_group: Text = ""

    @property
    def risk_priority(self) -> int:
        return risk_priority(self.severity_score, self.probability, self.impact)


class PremortemAnswer(_Answer):
    failure_story: Text = ""
    scenarios: list[PremortemScenario]

    def findings(self, thresholds: dict[str, float] | None = None) -> tuple[Finding, ...]:
        return tuple(
            _finding(s, ("premortem",), severity_from_rpn(s.risk_priority, thresholds), s.category)
            for s in self.scenarios
        )

    @property
    def categories(self) -> tuple[str | None, ...]:
        return tuple(s.category for s in self.scenarios)


class DomainAnalogy(_Answer):
    domain: Text
    analogous_decision: Text = ""
    failures: list[Text] = Field(default_factory=list)
    successes: list[Text] = Field(default_factory=list)
    title: Text
    lesson: Text = ""
    evidence: Text
    severity: NormSeverity = "medium"
    actionability: NormActionability = "monitor"
    suggested_action: Text = ""
    dedupe_group: Text = ""


class AdjacentDomainAnswer(_Answer):
    abstracted_decision: Text
    knowledge_basis: Text = ""
    analogies: list[DomainAnalogy]

    def findings(self, limit: int = 3) -> tuple[Finding, ...]:
        return tuple(_finding(a, ("adjacent_domain",), a.severity) for a in self.analogies[:limit])


class JudgedFinding(_Answer):
    source: Annotated[list[str], BeforeValidator(_as_list)]
    title: Text
    severity: NormSeverity = "medium"
    actionability: NormActionability = "add_to_risks"
    evidence: Text
    suggested_action: Text = ""
    dedupe_group: Text = ""
    merged_ids: list[Text] = Field(default_factory=list)

    def finding(self, allowed_sources: tuple[str, ...]) -> Finding:
        """Critic names are mapped to node names; a name the Judge made up becomes "judge"."""
        names = [normalize_source(s) for s in self.source]
        sources = tuple(dict.fromkeys(n for n in names if n in allowed_sources)) or ("judge",)
        return _finding(self, sources, self.severity)


class Exclusion(_Answer):
    id: Text
    covered_by: Text = ""


class JudgeAnswer(_Answer):
    findings: list[JudgedFinding]
    excluded: list[Exclusion] = Field(default_factory=list)
    total_count_by_severity: dict[str, int] = Field(default_factory=dict)
    self_assessment: Text = ""


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
        evidence=item.evidence,
        suggested_action=item.suggested_action,
        dedupe_group=item.dedupe_group,
        category=category,
    )
