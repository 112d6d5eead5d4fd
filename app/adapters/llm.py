"""LlmPort on the official `anthropic` SDK: one structured-output call per step.

Structured output: the prompt's output_schema.json goes out as `output_config.format` (json_schema,
passed through the SDK's public `transform_schema`, which moves constraints the API does not enforce,
such as maxItems or pattern, into descriptions); the answer is a JSON text block that call_prompt
parses and validates against the full schema. Forced tool use was the older pattern, but current models
(Sonnet 5.5) reject a forced tool_choice with a 400, so it is not used.

Retries are the SDK's (408/409/429/5xx/529, exponential back-off, retry-after honoured). The SDK has no
total deadline, so a middleware, which runs inside the SDK's retry loop once per attempt, gives each
attempt at most the time left and stops the loop when the budget is spent or a retry-after would overrun
it. `temperature` goes through extra_body only for models configured as accepting it (Opus 4.7, Sonnet 5
and later reject it with a 400); the configured value is still recorded by the caller.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.config import LlmSettings, RepoConfig, Settings
from app.core.results import Usage
from app.pipeline.ports import LlmError, LlmRequest, LlmResponse

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

PROMPT_HEADER = "x-adr-review-prompt"  # lets fakes and proxies tell steps apart; harmless to the API
_RETRYABLE = frozenset({408, 409, 429}) | frozenset(range(500, 600))
_MAX_BACKOFF_S = 8.0  # the SDK's MAX_RETRY_DELAY


class BudgetExceeded(Exception):
    """Raised inside the SDK's retry loop; not an API error type, so the SDK does not retry it."""


@dataclass
class _CallState:
    deadline: float
    timeout_s: float  # one attempt
    max_retries: int
    attempts: int = 0
    last_status: int | None = None


_CALL: contextvars.ContextVar[_CallState | None] = contextvars.ContextVar("adr_review_llm_call", default=None)


def _budget_middleware(request: Any, call_next: Any) -> Any:
    """Cap each attempt's timeout at the time left; refuse to start or to wait past the deadline."""
    state = _CALL.get()
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
        wait = _retry_after(response.headers)
        if wait is None:
            wait = min(0.5 * 2**request.retries_taken, _MAX_BACKOFF_S)
        if time.monotonic() + wait >= state.deadline:
            raise BudgetExceeded(f"HTTP {status}; waiting {wait:.1f}s to retry would overrun the time budget")
    return response


def _retry_after(headers: Mapping[str, str]) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return float(value) * scale
            except ValueError:
                return None
    return None


class AnthropicLlm:
    """LlmPort over `anthropic.Anthropic`. Thread-safe: critics call it concurrently."""

    def __init__(
        self, api_key: str, settings: LlmSettings | None = None, base_url: str | None = None
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self.settings = settings or LlmSettings()
        self._client: anthropic.Anthropic | None = None
        self._lock = threading.Lock()

    def _get_client(self) -> anthropic.Anthropic:
        with self._lock:
            if self._client is None:
                import anthropic

                self._client = anthropic.Anthropic(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    max_retries=self.settings.max_retries,
                    timeout=self.settings.timeout_s,
                    middleware=[_budget_middleware],
                )
            return self._client

    def build_params(self, request: LlmRequest) -> dict[str, Any]:
        """The messages.create keyword arguments for a request (public so tests can pin them)."""
        content: list[dict[str, Any]] = []
        if request.cacheable_prefix:
            content.append(
                {"type": "text", "text": request.cacheable_prefix, "cache_control": {"type": "ephemeral"}}
            )
        content.append({"type": "text", "text": request.user})
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": "user", "content": content}],
            "extra_headers": {PROMPT_HEADER: request.prompt_name},
        }
        if self.settings.structured_output and request.output_schema:
            params["output_config"] = {
                "format": {"type": "json_schema", "schema": api_schema(request.output_schema)}
            }
        if request.system:
            params["system"] = [{"type": "text", "text": request.system}]
        if request.temperature is not None and self.settings.accepts_temperature(request.model):
            params["extra_body"] = {"temperature": request.temperature}
        if request.metadata.get("user_id"):
            params["metadata"] = {"user_id": request.metadata["user_id"]}
        return params

    def cost(self, model: str, usage: Usage) -> float:
        price = self.settings.price_for(model)
        if price is None:
            log.warning("llm_price_unknown", extra={"model": model})
            return 0.0
        return (
            usage.input_tokens * price.input
            + usage.output_tokens * price.output
            + usage.cache_read_tokens * price.cache_read
            + usage.cache_write_tokens * price.cache_write
        ) / 1_000_000

    def complete(self, request: LlmRequest) -> LlmResponse:
        import anthropic

        params = self.build_params(request)
        started = time.monotonic()
        state = _CallState(
            deadline=started + self.settings.total_budget_s,
            timeout_s=self.settings.timeout_s,
            max_retries=self.settings.max_retries,
        )
        token = _CALL.set(state)
        try:
            message = self._get_client().messages.create(**params)
        except (BudgetExceeded, anthropic.APIError) as exc:
            failed = Usage(model=request.model, latency_s=time.monotonic() - started, calls=1)
            kind, text = _error_kind(exc)
            log.warning(
                "llm_call_failed",
                extra={
                    "prompt": request.prompt_name,
                    "model": request.model,
                    "kind": kind,
                    "attempts": state.attempts,
                    "error": text,
                    "latency_s": round(failed.latency_s, 3),
                },
            )
            raise LlmError(kind, text, failed) from exc
        finally:
            _CALL.reset(token)
        latency = time.monotonic() - started
        u = message.usage
        usage = Usage(
            model=request.model,
            input_tokens=int(u.input_tokens or 0),
            output_tokens=int(u.output_tokens or 0),
            cache_read_tokens=int(u.cache_read_input_tokens or 0),
            cache_write_tokens=int(u.cache_creation_input_tokens or 0),
            latency_s=latency,
            calls=1,
        )
        usage = Usage(**{**usage.__dict__, "cost_usd": self.cost(request.model, usage)})
        log.info(
            "llm_call",
            extra={
                "prompt": request.prompt_name,
                "model": request.model,
                "attempts": state.attempts,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "latency_s": round(latency, 3),
                "cost_usd": round(usage.cost_usd, 6),
                "stop_reason": message.stop_reason,
            },
        )
        if message.stop_reason == "refusal":
            raise LlmError("refused", "the model declined to answer", usage)
        text = "".join(block.text for block in message.content if block.type == "text")
        if not text.strip():
            raise LlmError("empty", f"no text in the answer (stop_reason={message.stop_reason})", usage)
        return LlmResponse(text=text, usage=usage)


def api_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The output schema as the structured-output API accepts it (the SDK's own transform)."""
    import anthropic

    return anthropic.transform_schema({k: v for k, v in schema.items() if k not in ("$schema", "$id")})


def _error_kind(exc: BaseException) -> tuple[str, str]:
    import anthropic

    if isinstance(exc, BudgetExceeded):
        return ("http_error" if str(exc).startswith("HTTP") else "timeout"), str(exc)
    if isinstance(exc, anthropic.APITimeoutError):
        return "timeout", "request timed out"
    if isinstance(exc, anthropic.APIStatusError):
        return "http_error", f"HTTP {exc.status_code}: {_api_message(exc)}"
    if isinstance(exc, anthropic.APIConnectionError):
        return "connection", str(exc)
    return "http_error", str(exc)


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error")
        if isinstance(err, Mapping) and err.get("message"):
            return f"{err.get('type', 'error')}: {err['message']}"
    return str(getattr(exc, "message", exc))


def make_llm(settings: Settings, config: RepoConfig) -> AnthropicLlm | None:
    """The configured LLM, or None when no API key is set (recall then runs extractive)."""
    if not settings.anthropic_api_key:
        return None
    return AnthropicLlm(settings.anthropic_api_key, config.llm, base_url=settings.anthropic_base_url)
