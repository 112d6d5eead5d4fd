"""Spend caps a team sets (repo config `limits:`, the Action's inputs): per run and per calendar month.

One rule for the Action and the App, at the LlmPort: every model call goes through `BudgetedLlm`, which
refuses a call once a cap is reached (the stage then degrades like any failed call: recall falls back to
extractive, a critic is left out, and the comment says why) and adds what each call cost to the
state store's ledger. Before a run starts, `blocked()` tells whether the month is already spent, so the
plan treats the run as offline (its keys say so: when the month turns, the ADRs are reviewed again).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app.config import LimitsConfig, RepoConfig
from app.pipeline.ports import LlmError, LlmPort, LlmRequest, LlmResponse, SpendLedger


def month_of(epoch: float) -> str:
    return time.strftime("%Y-%m", time.gmtime(epoch))


@dataclass
class Budget:
    """One run's view of the caps; thread-safe (the critics call the model concurrently)."""

    ledger: SpendLedger
    scope: str  # the repository
    limits: LimitsConfig
    clock: Callable[[], float] = time.time
    spent_run: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def period(self) -> str:
        return month_of(self.clock())

    def blocked(self) -> str | None:
        """Why no more model calls may be made now, or None."""
        per_run, per_month = self.limits.spend_per_run_usd, self.limits.spend_per_month_usd
        with self._lock:
            run = self.spent_run
        if per_run is not None and run >= per_run:
            return f"spend cap per run reached (${run:.2f} of ${per_run:.2f})"
        if per_month is not None:
            month = self.ledger.spent(self.scope, self.period)
            if month >= per_month:
                return f"monthly spend cap reached (${month:.2f} of ${per_month:.2f} in {self.period})"
        return None

    def record(self, usd: float, calls: int = 1) -> None:
        if calls <= 0 and usd <= 0:
            return
        with self._lock:
            self.spent_run += usd
        self.ledger.add_spend(self.scope, self.period, usd, calls)


class BudgetedLlm:
    """The LlmPort behind the caps: refuses once a cap is reached, books every call's cost."""

    def __init__(self, llm: LlmPort, budget: Budget) -> None:
        self.llm = llm
        self.budget = budget

    def complete(self, request: LlmRequest) -> LlmResponse:
        why = self.budget.blocked()
        if why is not None:
            raise LlmError("budget", why)
        try:
            response = self.llm.complete(request)
        except LlmError as exc:
            self.budget.record(exc.usage.cost_usd, exc.usage.calls)  # a failed call can still be billed
            raise
        self.budget.record(response.usage.cost_usd, max(1, response.usage.calls))
        return response

    def __getattr__(self, name: str) -> object:  # the adapter's other attributes (model names, …)
        return getattr(self.llm, name)


def metered(llm: LlmPort | None, ledger: SpendLedger, repo: str, config: RepoConfig) -> LlmPort | None:
    """The run's model behind the repository's caps (None stays None: no model, nothing to meter)."""
    return BudgetedLlm(llm, Budget(ledger, repo, config.limits)) if llm is not None else None
