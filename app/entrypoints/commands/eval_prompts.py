"""`adr-review eval prompts`: the golden-eval gate on prompt changes (app/evals/prompts.py, docs/golden-eval.md)."""

from __future__ import annotations

from app.evals.prompts import configure, run

__all__ = ["configure", "run"]
