"""The LLM adapter: LlmPort on the `anthropic` SDK, for the Claude API, Amazon Bedrock and Vertex AI.

adapter.py: the calls (structured output, cost, the overload fallback); budget.py: the total time
budget per call; providers.py: which SDK client, its auth, and the provider's model ids.
"""

from __future__ import annotations

from adr_review.adapters.llm.adapter import PROMPT_HEADER, AnthropicLlm, api_schema
from adr_review.adapters.llm.budget import BudgetExceeded
from adr_review.adapters.llm.providers import Connection, provider_model_id
from adr_review.config import Provider, RepoConfig, Settings

__all__ = [
    "PROMPT_HEADER",
    "AnthropicLlm",
    "BudgetExceeded",
    "Connection",
    "api_schema",
    "make_llm",
    "provider_model_id",
    "provider_of",
]


def provider_of(settings: Settings, config: RepoConfig) -> Provider:
    """The process setting (ADR_REVIEW_LLM_PROVIDER, the operator's) wins over the repo config's."""
    return settings.llm_provider or config.llm.provider


def make_llm(settings: Settings, config: RepoConfig) -> AnthropicLlm | None:
    """The configured LLM, or None when there is none: on the Claude API that means no API key (recall
    then runs extractive). Bedrock and Vertex authenticate with their own credentials, checked on the
    first call (a missing one is a `config` LlmError, which degrades the step like any failed call)."""
    provider = provider_of(settings, config)
    if provider == "anthropic":
        if not settings.anthropic_api_key:
            return None
        conn = Connection(api_key=settings.anthropic_api_key, base_url=settings.anthropic_base_url)
    else:
        conn = Connection(
            provider=provider,
            region=config.llm.region,
            project_id=config.llm.project_id,
            access_token=settings.vertex_access_token if provider == "vertex" else None,
        )
    return AnthropicLlm(settings=config.llm, connection=conn)
