"""Spies on the one PR use case, so a test can show which entrypoint reaches it."""

from __future__ import annotations

from typing import Any

import pytest


def record_pr_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Wrap adr_review.pipeline.plans.pr.plan and run_target; the returned list names each call, in order."""
    from adr_review.pipeline.plans import pr

    seen: list[str] = []
    for name in ("plan", "run_target"):
        real = getattr(pr, name)

        def spy(*a: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            seen.append(_name)
            return _real(*a, **kw)

        monkeypatch.setattr(pr, name, spy)
    return seen


def record_screens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Wrap adr_review.core.triggers.screen where the intake and the plan call it; one entry per call."""
    from adr_review.core import triggers
    from adr_review.pipeline.plans import pr
    from adr_review.pipeline.server import intake

    seen: list[str] = []
    real = triggers.screen

    def spy(event: Any) -> Any:
        seen.append(type(event).__name__)
        return real(event)

    for module in (triggers, intake, pr):
        monkeypatch.setattr(module, "screen", spy)
    return seen
