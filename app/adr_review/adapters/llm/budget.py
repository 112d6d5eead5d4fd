"""A total time budget for one model call, all of the SDK's attempts and back-off included.

The SDK retries (408/409/429/5xx/529, exponential back-off, retry-after honoured) but has no total
deadline. This middleware runs inside the SDK's retry loop, once per attempt: it gives each attempt at
most the time left and stops the loop when the budget is spent or a retry-after would overrun it.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_RETRYABLE = frozenset({408, 409, 429}) | frozenset(range(500, 600))
_MAX_BACKOFF_S = 8.0  # the SDK's MAX_RETRY_DELAY


class BudgetExceeded(Exception):
    """Raised inside the SDK's retry loop; not an API error type, so the SDK does not retry it."""


@dataclass
class CallState:
    deadline: float
    timeout_s: float  # one attempt
    max_retries: int
    attempts: int = 0
    last_status: int | None = None


CURRENT: contextvars.ContextVar[CallState | None] = contextvars.ContextVar(
    "adr_review_llm_call", default=None
)


def budget_middleware(request: Any, call_next: Any) -> Any:
    """Cap each attempt's timeout at the time left; refuse to start or to wait past the deadline."""
    state = CURRENT.get()
    if state is None:
        return call_next(request)
    remaining = state.deadline - time.monotonic()
    if remaining <= 0:
        raise BudgetExceeded(f"total time budget spent after {state.attempts} attempt(s)")
    state.attempts += 1
    response = call_next(request.copy(timeout=min(state.timeout_s, remaining)))
    status = int(response.status_code)
    state.last_status = status
    retryable = response.headers.get("x-should-retry", "") != "false" and (
        status in _RETRYABLE or response.headers.get("x-should-retry") == "true"
    )
    if retryable and request.retries_taken < state.max_retries:
        wait = retry_after(response.headers)
        if wait is None:
            wait = min(0.5 * 2**request.retries_taken, _MAX_BACKOFF_S)
        if time.monotonic() + wait >= state.deadline:
            raise BudgetExceeded(f"HTTP {status}; waiting {wait:.1f}s to retry would overrun the time budget")
    return response


def retry_after(headers: Mapping[str, str]) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return float(value) * scale
            except ValueError:
                return None
    return None
