"""A fake LLM at the port (adr_review.pipeline.ports.LlmPort), scripted per prompt name. Thread-safe.

    llm = FakeLlm()
    llm.on("blindspot-premortem", {"failure_story": "...", "scenarios": [...]})   # every call
    llm.on("blindspot-judge", lambda req: {...}, delay=0.5)                      # computed per call
    llm.fail_first("blindspot-devils-advocate", 2)                               # 2 failures, then .on()
    llm.queue("recall-pre-gate", "not json", {"citations": []})                  # one-shot, in order
    llm.count("blindspot-judge"); llm.counts(); llm.requests("blindspot-judge")[0].user

A reply is: a dict/list (sent as JSON text), a str (sent as raw text), an LlmResponse (returned as
is), an exception instance (raised), or a callable taking the LlmRequest and returning any of those.
Queued replies are used first, in order; then the prompt's `on` reply; a prompt with neither raises
LookupError (the call is still logged), so an unexpected step is visible, not silently answered.
Usage is synthetic but deterministic (~4 characters a token) unless a reply gives its own.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from adr_review.core.results import Usage
from adr_review.pipeline.ports import LlmError, LlmRequest, LlmResponse

Reply = Any  # dict | list | str | LlmResponse | BaseException | Callable[[LlmRequest], Reply]

PRICE_PER_TOKEN = 1e-6  # a flat fake price so cost sums are checkable


@dataclass(frozen=True)
class Step:
    reply: Reply
    delay: float = 0.0
    usage: Usage | None = None  # None: synthetic


@dataclass(frozen=True)
class FakeCall:
    n: int
    request: LlmRequest
    started: float  # time.monotonic()
    finished: float | None = None
    outcome: str = "pending"  # ok | raised:<ExceptionType> | pending


class FakeLlm:
    def __init__(self, *, structured: bool = False) -> None:
        """structured=True: also return the parsed answer in LlmResponse.data, as the Anthropic
        adapter does with tool input; False: text only, so the caller's tolerant parser runs."""
        self.structured = structured
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Step]] = {}
        self._defaults: dict[str, Step] = {}
        self._calls: list[FakeCall] = []
        self._in_flight = 0
        self.peak_concurrency = 0

    # -- scripting -----------------------------------------------------------------------------------
    def on(self, prompt: str, reply: Reply, *, delay: float = 0.0, usage: Usage | None = None) -> FakeLlm:
        """What every call of `prompt` answers once its queue is empty."""
        with self._lock:
            self._defaults[prompt] = Step(reply, delay, usage)
        return self

    def queue(self, prompt: str, *replies: Reply, delay: float = 0.0) -> FakeLlm:
        """One-shot replies for the next calls of `prompt`, in order, before its `on` reply."""
        with self._lock:
            self._queues.setdefault(prompt, deque()).extend(Step(r, delay) for r in replies)
        return self

    def fail_first(
        self, prompt: str, n: int, error: BaseException | None = None, *, delay: float = 0.0
    ) -> FakeLlm:
        """The next n calls of `prompt` raise `error` (default: an overloaded HTTP error); then `on`."""
        err = error if error is not None else LlmError("http_error", "HTTP 529: overloaded_error")
        return self.queue(prompt, *([err] * n), delay=delay)

    def reset(self) -> None:
        with self._lock:
            self._queues.clear()
            self._defaults.clear()
            self._calls.clear()
            self.peak_concurrency = 0

    # -- the call log --------------------------------------------------------------------------------
    def calls(self, prompt: str | None = None) -> list[FakeCall]:
        with self._lock:
            return [c for c in self._calls if prompt is None or c.request.prompt_name == prompt]

    def requests(self, prompt: str | None = None) -> list[LlmRequest]:
        return [c.request for c in self.calls(prompt)]

    def count(self, prompt: str | None = None) -> int:
        return len(self.calls(prompt))

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(Counter(c.request.prompt_name for c in self._calls))

    # -- LlmPort -------------------------------------------------------------------------------------
    def complete(self, request: LlmRequest) -> LlmResponse:
        started = time.monotonic()
        with self._lock:
            queue = self._queues.get(request.prompt_name)
            step = queue.popleft() if queue else self._defaults.get(request.prompt_name)
            n = len(self._calls)
            self._calls.append(FakeCall(n=n, request=request, started=started))
            self._in_flight += 1
            self.peak_concurrency = max(self.peak_concurrency, self._in_flight)
        outcome = "ok"
        try:
            if step is None:
                raise LookupError(f"FakeLlm: no reply scripted for prompt {request.prompt_name!r}")
            if step.delay:
                time.sleep(step.delay)
            return self._respond(request, step, step.reply, started)
        except BaseException as exc:
            outcome = f"raised:{type(exc).__name__}"
            raise
        finally:
            with self._lock:
                self._in_flight -= 1
                self._calls[n] = FakeCall(n, request, started, time.monotonic(), outcome)

    def _respond(self, request: LlmRequest, step: Step, reply: Reply, started: float) -> LlmResponse:
        while callable(reply) and not isinstance(reply, BaseException | type):
            reply = reply(request)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, LlmResponse):
            return reply
        data = None
        if isinstance(reply, str):
            text = reply
        else:
            text = json.dumps(reply, ensure_ascii=False)
            data = reply if self.structured else None
        usage = step.usage or synthetic_usage(request, text, time.monotonic() - started)
        return LlmResponse(text=text, usage=usage, data=data)


def synthetic_usage(request: LlmRequest, output: str, latency_s: float = 0.0) -> Usage:
    input_tokens = max(
        1, (len(request.system) + len(request.user) + len(request.cacheable_prefix or "")) // 4
    )
    output_tokens = max(1, len(output) // 4)
    return Usage(
        model=request.model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        latency_s=latency_s,
        cost_usd=(input_tokens + output_tokens) * PRICE_PER_TOKEN,
        calls=1,
    )
