"""Schema-valid answers for the blind-spot prompts, for fakes at the LLM port or the HTTP layer.

`judge_echo_answer(text)` plays a Judge that keeps every critic finding it was shown, so a test sees
exactly what reached the Judge; `critic_items(text)` reads that block from a rendered judge prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

ALL_CATEGORIES = ("technical", "operational", "business_regulatory", "cognitive")
DA_TITLES = ("No cost ceiling", "No rollback trigger", "Prompt injection via ADR text")


def da_answer(titles: Iterable[str] = DA_TITLES, quote: str = "We will call a hosted LLM") -> dict[str, Any]:
    return {
        "conclusion": "Call a hosted LLM on every ADR pull request.",
        "counter_arguments": [
            {
                "perspective": "cost",
                "title": t,
                "argument": f"Because {t.lower()}.",
                "quote": quote,
                "section": "Decision",
                "gap": f"The ADR does not address it: {t.lower()}.",
                "severity": "high",
                "actionability": "revise_adr",
                "suggested_action": f"Address: {t}",
                "dedupe_group": re.sub(r"\W+", "-", t.lower()),
            }
            for t in titles
        ],
    }


def pm_answer(
    categories: Iterable[str] = ALL_CATEGORIES,
    scores: tuple[int, int, int] = (4, 4, 4),
    quote: str = "We will call a hosted LLM on every pull request that changes an ADR",
) -> dict[str, Any]:
    s, p, i = scores
    return {
        "failure_story": "It all went wrong.",
        "scenarios": [
            {
                "category": c,
                "title": f"{c} failure of the reviewer",
                "scenario": f"The {c} side broke.",
                "quote": quote,
                "section": "Decision",
                "gap": "No monitoring is described.",
                "severity_score": s,
                "probability": p,
                "impact": i,
                "risk_priority": 999,  # wrong on purpose: the code recomputes it
                "suggested_action": "Plan for it",
                "dedupe_group": f"{c}-failure",
            }
            for c in categories
        ],
    }


def ad_answer(
    domains: Iterable[str] = ("aviation", "medicine", "finance"),
    quote: str = "post its findings as a comment",
) -> dict[str, Any]:
    return {
        "abstracted_decision": "Automate a human review step.",
        "knowledge_basis": "model knowledge, no live search",
        "analogies": [
            {
                "domain": d,
                "analogous_decision": "Automated checks replaced a human sign-off",
                "failures": ["people stopped reading the reports"],
                "successes": ["faster turnaround"],
                "title": f"Automation complacency: reports go unread ({d})",
                "lesson": "Humans defer to the machine.",
                "quote": quote,
                "section": "Decision",
                "gap": "Nothing keeps people reading the reports.",
                "severity": "medium",
                "suggested_action": "Keep a human in the loop",
                "dedupe_group": "automation-complacency",
            }
            for d in domains
        ],
    }


def critic_items(prompt_text: str) -> list[dict[str, Any]]:
    """The critic findings a rendered judge prompt carries (the JSON between its tags)."""
    m = re.search(r"<critic_findings>\s*(.*?)\s*</critic_findings>", prompt_text, re.DOTALL)
    assert m, "judge prompt has no critic findings block"
    items: list[dict[str, Any]] = json.loads(m.group(1))
    return items


def judge_echo_answer(prompt_text: str) -> dict[str, Any]:
    """A Judge that keeps every critic finding as it is."""
    items = critic_items(prompt_text)
    findings = [
        {
            "source": it["source"],
            "title": it["title"],
            "severity": it["severity"],
            "actionability": it["actionability"],
            "quote": it["quote"],
            "section": it.get("section", ""),
            "gap": it["gap"],
            "suggested_action": it.get("suggested_action", ""),
            "dedupe_group": it.get("dedupe_group", ""),
            "merged_ids": [it["id"]],
            "confidence": 0.8,
        }
        for it in items
    ]
    return {
        "findings": findings,
        "total_count_by_severity": {
            "critical": 99,
            "high": 0,
            "medium": 0,
            "low": 0,
        },  # wrong on purpose: recounted
        "self_assessment": f"judged {len(items)} findings",
    }
