"""Spend caps a team sets (repo config `limits:`, the Action's inputs): per run and per calendar month.

One rule for the Action and the App, at the LlmPort: every model call goes through `BudgetedLlm`, which
refuses a call once a cap is reached (the stage then degrades like any failed call: recall falls back to
extractive, a critic is left out, and the comment says why) and adds what each call cost to the
state store's ledger. Before a run starts, `blocked()` tells whether the month is already spent, so the
plan treats the run as offline (its keys say so: when the month turns, the ADRs are reviewed again).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from adr_review.config import LimitsConfig, RepoConfig
from adr_review.core.feedback import read_ledger
from adr_review.pipeline.ports import GitHubError, LlmError, LlmPort, LlmRequest, LlmResponse
from adr_review.pipeline.state_ports import SpendLedger

log = logging.getLogger(__name__)


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


def month_start(period: str) -> float:
    """The unix time a UTC month ("2026-12") begins."""
    year, month = (int(x) for x in period.split("-"))
    return datetime(year, month, 1, tzinfo=UTC).timestamp()


def published_spend(bodies: Sequence[str], period: str) -> float:
    """What the reviews these comments carry cost in `period`, by their ledgers (`Ledger.spend`)."""
    return sum((ledger.spent_in(period) for b in bodies if (ledger := read_ledger(b))), 0.0)


class PublishedMonth:
    """The Action's month: a PR job restores the cache but only the scheduled job saves it, so the
    cache alone never sees what other PRs' jobs spent. Every published review books its cost, per
    month, in its comment's ledger: those of the whole repository are read once per period (one
    paginated read), and what this job spends is added. What no comment carries (a job that crashed
    or was cancelled before publishing) is seen only through the cache (docs/action.md)."""

    def __init__(self, local: SpendLedger, comments_since: Callable[[float], Sequence[str]]) -> None:
        self.local = local
        self.comments_since = comments_since
        self._published: dict[str, float] = {}
        self._mine: dict[str, float] = {}
        self._lock = threading.Lock()

    def add_spend(self, scope: str, period: str, usd: float, calls: int = 1) -> float:
        """Book a call (in the cache too); the total as far as known, without reading the comments
        (only a cap asks for those)."""
        with self._lock:
            self._mine[period] = self._mine.get(period, 0.0) + usd
            seen = self._published.get(period, 0.0) + self._mine[period]
        return max(seen, self.local.add_spend(scope, period, usd, calls))

    def spent(self, scope: str, period: str) -> float:
        with self._lock:
            if period not in self._published:
                self._published[period] = self._read(period)
            seen = self._published[period] + self._mine.get(period, 0.0)
        return max(seen, self.local.spent(scope, period))

    def _read(self, period: str) -> float:
        try:
            return published_spend(self.comments_since(month_start(period)), period)
        except GitHubError as exc:  # the cap still holds on what this runner's cache knows
            log.warning("monthly spend: cannot read this month's comments, using the cache's: %s", exc)
            return 0.0
