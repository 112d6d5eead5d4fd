"""The one retry policy of every GitHub call: REST, the installation-token mint and the App's hook deliveries.

Our own loop around PyGithub rather than `github.GithubRetry` (a urllib3 `Retry` under the session):
- the budget is per call and *total* (attempts and seconds waited); GithubRetry caps each rate-limit wait
  (`max_rate_limit_wait`) but not their sum, and urllib3 sleeps whatever a `retry-after` says;
- a POST whose answer was a 5xx may still have landed: before repeating it we look (`before_retry`);
  GithubRetry would repeat a comment POST blindly and post it twice;
- a 401 with an installation token is a reason to mint a new token and try once more (`reauth`), which
  needs a hook above the HTTP layer anyway;
- sleep and clock are injected, so the waits are tested without waiting.
Past the budget a call raises GitHubError, never returns empty.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from adr_review.pipeline.ports import GitHubError

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    max_total_wait_s: float = 180.0  # across all retries of one call: a job never sleeps an hour on a reset
    backoff_s: float = 2.0  # first backoff for 5xx / connection errors, doubled each time
    secondary_wait_s: float = 60.0  # GitHub: "wait at least one minute" on a secondary limit without headers


def retry_wait(
    status: int | None,
    headers: dict[str, str],
    message: str,
    attempt: int,
    *,
    now: float,
    policy: RetryPolicy,
) -> float | None:
    """Seconds to wait before the next attempt, or None when this failure is not worth retrying.

    Follows GitHub's guidance: `retry-after` first; else, with `x-ratelimit-remaining: 0`, until
    `x-ratelimit-reset`; else a secondary rate limit waits a minute; 5xx and connection errors back off.
    """
    h = {k.lower(): v for k, v in headers.items()}
    backoff = policy.backoff_s * (2 ** (attempt - 1))
    retry_after = _float(h.get("retry-after"))
    rate_limited = status == 429 or (
        status == 403
        and (
            retry_after is not None
            or h.get("x-ratelimit-remaining") == "0"
            or "rate limit" in message.lower()
        )
    )
    if rate_limited:
        if retry_after is not None:
            return max(retry_after, 0.0)
        reset = _float(h.get("x-ratelimit-reset"))
        if h.get("x-ratelimit-remaining") == "0" and reset is not None:
            return max(reset - now, 0.0) + 1.0
        return policy.secondary_wait_s
    if status is None or status >= 500:
        return retry_after if retry_after is not None else backoff
    return None


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class Retrier:
    """Runs GitHub calls under the policy; stateless, so one is shared by every client of a process."""

    def __init__(
        self,
        policy: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._clock = clock

    def call(
        self,
        operation: str,
        fn: Callable[[], T],
        *,
        before_retry: Callable[[], T | None] | None = None,
        reauth: Callable[[], None] | None = None,
    ) -> T:
        """fn() with bounded retries.

        `before_retry` may return a result that makes a retry moot (a POST that did land although its
        answer was a 502). `reauth` is called on the first 401 (drop the cached installation token);
        the call is then tried once more at once, and a second 401 fails it.
        """
        import requests
        from github import GithubException

        waited = 0.0
        attempt = 0
        reauthed = False
        while True:
            attempt += 1
            try:
                return fn()
            except GithubException as exc:
                status: int | None = exc.status
                headers = {str(k): str(v) for k, v in (exc.headers or {}).items()}
                message = _message(exc.data) or str(exc)
            except (requests.ConnectionError, requests.Timeout) as exc:
                status, headers, message = None, {}, f"{type(exc).__name__}: {exc}"
            if status == 401 and reauth is not None and not reauthed:
                reauthed = True
                log.warning("GitHub %s: HTTP 401 (%s); minting a new installation token", operation, message)
                reauth()
                continue
            wait = retry_wait(status, headers, message, attempt, now=self._clock(), policy=self.policy)
            if wait is None:
                raise GitHubError(operation, message, status)
            if attempt >= self.policy.max_attempts or waited + wait > self.policy.max_total_wait_s:
                raise GitHubError(
                    operation,
                    f"{message} (gave up after {attempt} attempt(s), {waited:.0f}s waited; "
                    f"the next wait would have been {wait:.0f}s)",
                    status,
                )
            log.warning(
                "GitHub %s: %s (HTTP %s); retry %d in %.1fs", operation, message, status, attempt, wait
            )
            self._sleep(wait)
            waited += wait
            if before_retry is not None:
                done = before_retry()
                if done is not None:
                    return done


def _message(data: Any) -> str:
    if isinstance(data, dict):
        return str(data.get("message") or "")
    return str(data or "")
