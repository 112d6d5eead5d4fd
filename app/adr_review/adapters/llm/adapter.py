"""LlmPort on the official `anthropic` SDK: one structured-output call per step, on any provider.

Structured output: the prompt's output_schema.json goes out as `output_config.format` (json_schema,
passed through the SDK's public `transform_schema`, which moves constraints the API does not enforce,
such as maxItems or pattern, into descriptions); the answer is a JSON text block that call_prompt parses
and validates against the full schema. Forced tool use is not used: current models reject it with a 400.

Sampling parameters are never sent: the SDK (>= 2.0) speaks API version 2026-10-21, which removed
`temperature`, `top_p` and `top_k` for every model on every provider (a request carrying any of them is
a 400; https://platform.claude.com/docs/en/api/versioning). The configured temperature is still recorded
by the caller, and `Usage.temperature_not_sent` names each one that was dropped, for the footer.

Overload: after the SDK's own retries, a call still answered with HTTP 529 is asked once more of
`llm.fallback_model` (within what is left of the time budget); `Usage.fallbacks` says so.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from adr_review.adapters.llm.budget import CURRENT, BudgetExceeded, CallState, budget_middleware
from adr_review.adapters.llm.providers import Connection, build_client, provider_model_id
from adr_review.config import LlmSettings
from adr_review.core.results import Usage
from adr_review.pipeline.ports import LlmError, LlmRequest, LlmResponse

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

PROMPT_HEADER = "x-adr-review-prompt"  # lets fakes and proxies tell steps apart; harmless to the API
OVERLOADED = 529


class AnthropicLlm:
    """LlmPort over the SDK's client for the configured provider. Thread-safe: critics call it concurrently."""

    def __init__(
        self,
        api_key: str | None = None,
        settings: LlmSettings | None = None,
        base_url: str | None = None,
        *,
        connection: Connection | None = None,
    ) -> None:
        self.settings = settings or LlmSettings()
        self.connection = connection or Connection(
            provider=self.settings.provider,
            api_key=api_key,
            base_url=base_url,
            region=self.settings.region,
            project_id=self.settings.project_id,
        )
        self._ids = self.settings.provider_ids(self.connection.provider)
        self._client: Any = None
        self._lock = threading.Lock()

    def _get_client(self) -> anthropic.Anthropic | anthropic.AnthropicBedrock | anthropic.AnthropicVertex:
        with self._lock:
            if self._client is None:
                self._client = build_client(
                    self.connection,
                    max_retries=self.settings.max_retries,
                    timeout_s=self.settings.timeout_s,
                    middleware=[budget_middleware],
                )
            return self._client

    def endpoint(self) -> str:
        """The URL requests go to, as the SDK client resolved it: a configured base URL, the SDK's own
        environment variables (ANTHROPIC_BASE_URL, ANTHROPIC_BEDROCK_BASE_URL, ...) or the provider's
        host. What the golden eval labels an answer by (app/adr_review/evals/golden/cases.py `answer_source`)."""
        return str(self._get_client().base_url)

    def build_params(self, request: LlmRequest, model: str | None = None) -> dict[str, Any]:
        """The messages.create keyword arguments for a request (public so tests can pin them)."""
        content: list[dict[str, Any]] = []
        if request.cacheable_prefix:  # specific to one ADR's call: never read again, so not cached
            content.append({"type": "text", "text": request.cacheable_prefix})
        content.append({"type": "text", "text": request.user})
        params: dict[str, Any] = {
            "model": provider_model_id(model or request.model, self.connection.provider, self._ids),
            "max_tokens": request.max_tokens,
            "messages": [{"role": "user", "content": content}],
            "extra_headers": {PROMPT_HEADER: request.prompt_name},
        }
        if self.settings.structured_output and request.output_schema:
            params["output_config"] = {
                "format": {"type": "json_schema", "schema": api_schema(request.output_schema)}
            }
        system: list[dict[str, Any]] = []
        if request.shared_prefix:  # first, so every node of one review shares the cached prefix
            system.append(
                {"type": "text", "text": request.shared_prefix, "cache_control": {"type": "ephemeral"}}
            )
        if request.system:
            system.append({"type": "text", "text": request.system})
        if system:
            params["system"] = system
        if request.metadata.get("user_id"):
            params["metadata"] = {"user_id": request.metadata["user_id"]}
        return params

    def cost(self, model: str, usage: Usage) -> Usage:
        """`usage` with its price; a model with no price keeps cost 0 and is named in unpriced_models."""
        price = self.settings.price_for(model)
        if price is None:
            log.warning("llm_price_unknown", extra={"model": model})
            return dataclasses.replace(usage, unpriced_models=(model,))
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        long = price.long_prompt_tokens is not None and prompt > price.long_prompt_tokens
        factor = price.long_prompt_factor if long else 1.0
        usd = (
            usage.input_tokens * price.input
            + usage.output_tokens * price.output
            + usage.cache_read_tokens * price.cache_read
            + usage.cache_write_tokens * price.cache_write
        ) * factor
        return dataclasses.replace(usage, cost_usd=usd / 1_000_000)

    def complete(self, request: LlmRequest) -> LlmResponse:
        started = time.monotonic()
        deadline = started + self.settings.total_budget_s
        dropped = ((request.prompt_name, request.temperature),) if request.temperature is not None else ()
        try:
            message, model = self._call(request, request.model, deadline)
            fallbacks: tuple[tuple[str, str], ...] = ()
        except _Overloaded as first:
            fallback = self.settings.fallback_model
            if not fallback or fallback == request.model or time.monotonic() >= deadline:
                raise first.error from None
            log.warning(
                "llm_fallback", extra={"prompt": request.prompt_name, "from": request.model, "to": fallback}
            )
            try:
                message, model = self._call(request, fallback, deadline)
            except (_Overloaded, LlmError) as second:
                err = second.error if isinstance(second, _Overloaded) else second
                raise LlmError(
                    first.error.kind,
                    f"{first.error.message}; fallback {fallback}: {err.message}",
                    first.error.usage + err.usage,
                ) from None
            fallbacks = ((request.model, fallback),)
            paid_before = first.error.usage
        else:
            paid_before = Usage()
        u = message.usage
        usage = self.cost(
            model,
            Usage(
                model=model,
                input_tokens=int(u.input_tokens or 0),
                output_tokens=int(u.output_tokens or 0),
                cache_read_tokens=int(u.cache_read_input_tokens or 0),
                cache_write_tokens=int(u.cache_creation_input_tokens or 0),
                latency_s=time.monotonic() - started - paid_before.latency_s,
                calls=1,
                temperature_not_sent=dropped,
                fallbacks=fallbacks,
            ),
        )
        usage = paid_before + usage
        log.info(
            "llm_call",
            extra={
                "prompt": request.prompt_name,
                "model": model,
                "provider": self.connection.provider,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "latency_s": round(usage.latency_s, 3),
                "cost_usd": round(usage.cost_usd, 6),
                "cost_known": usage.cost_known,
                "stop_reason": message.stop_reason,
            },
        )
        if message.stop_reason == "refusal":
            raise LlmError("refused", "the model declined to answer", usage)
        text = "".join(block.text for block in message.content if block.type == "text")
        if not text.strip():
            raise LlmError("empty", f"no text in the answer (stop_reason={message.stop_reason})", usage)
        return LlmResponse(text=text, usage=usage, stop_reason=message.stop_reason)

    def _call(self, request: LlmRequest, model: str, deadline: float) -> tuple[Any, str]:
        """One logical call of `model` (the SDK's retries inside). Raises _Overloaded on a final 529."""
        import anthropic

        started = time.monotonic()
        state = CallState(
            deadline=deadline, timeout_s=self.settings.timeout_s, max_retries=self.settings.max_retries
        )
        token = CURRENT.set(state)
        try:
            return self._get_client().messages.create(**self.build_params(request, model)), model
        except (BudgetExceeded, anthropic.APIError) as exc:
            kind, text = _error_kind(exc)
            failed = LlmError(kind, text, Usage(model=model, latency_s=time.monotonic() - started, calls=1))
            self._log_failure(request, model, failed, state.attempts)
            overloaded = getattr(exc, "status_code", None) == OVERLOADED or (
                isinstance(exc, BudgetExceeded) and state.last_status == OVERLOADED
            )
            if overloaded:
                raise _Overloaded(failed) from exc
            raise failed from exc
        except (anthropic.AnthropicError, ValueError, RuntimeError, ImportError) as exc:
            # the provider is not configured: no region or project, no credentials, a missing extra
            failed = LlmError("config", f"{self.connection.provider}: {exc}".strip(), Usage(model=model))
            self._log_failure(request, model, failed, state.attempts)
            raise failed from exc
        finally:
            CURRENT.reset(token)

    def _log_failure(self, request: LlmRequest, model: str, err: LlmError, attempts: int) -> None:
        log.warning(
            "llm_call_failed",
            extra={
                "prompt": request.prompt_name,
                "model": model,
                "provider": self.connection.provider,
                "kind": err.kind,
                "attempts": attempts,
                "error": err.message,
                "latency_s": round(err.usage.latency_s, 3),
            },
        )


class _Overloaded(Exception):
    """A call that ended on HTTP 529 after the SDK's retries: the fallback model may be asked."""

    def __init__(self, error: LlmError) -> None:
        super().__init__(str(error))
        self.error = error


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
    if isinstance(exc, (anthropic.AuthenticationError, anthropic.PermissionDeniedError)):
        # the credentials were refused: every later call fails alike, so the entrypoints fail loudly
        return "auth", f"HTTP {exc.status_code}: {_api_message(exc)}"
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
        if body.get("message"):  # Bedrock's and Vertex's own error bodies
            return str(body["message"])
    return str(getattr(exc, "message", exc))
