"""Which endpoint answers: the Claude API, Amazon Bedrock or Google Vertex AI, through the `anthropic`
SDK's own clients (`Anthropic`, `AnthropicBedrock`, `AnthropicVertex`) and their own auth.

- anthropic: an API key (ANTHROPIC_API_KEY); ANTHROPIC_BASE_URL for a proxy.
- bedrock: AWS SigV4 from boto3's credential chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
  AWS_SESSION_TOKEN, AWS_PROFILE, an instance or OIDC role), or a Bedrock API key
  (AWS_BEARER_TOKEN_BEDROCK); the region from `llm.region`, else AWS_REGION / AWS_DEFAULT_REGION.
  Needs boto3 (`pip install 'adr-review[bedrock]'`). Requests go to /model/{id}/invoke.
- vertex: a ready access token, else Application Default Credentials through google-auth (`pip install
  'adr-review[vertex]'`); project from `llm.project_id`, else ANTHROPIC_VERTEX_PROJECT_ID or the
  credentials'; region from `llm.region`, else CLOUD_ML_REGION. Requests go to …/models/{id}:rawPredict.

Model ids are the Claude API's everywhere in the config; `provider_model_id` maps one to the provider's
at the last moment (the price table and the footer keep the Claude API id).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from adr_review.config import Provider

if TYPE_CHECKING:
    import anthropic

_DATED = re.compile(r"^(?P<base>claude-[a-z0-9-]+?)-(?P<date>\d{8})$")


def provider_model_id(model: str, provider: Provider, table: Mapping[str, str]) -> str:
    """The id `provider` knows `model` by: the table first, then the provider's documented format rule.

    An id already in the provider's form (`anthropic.…`, an ARN, an inference profile `us.anthropic.…`,
    `…@date`) or one that is not a Claude API id passes through unchanged.
    """
    if provider == "anthropic":
        return model
    if model in table:
        return table[model]
    if not model.startswith("claude-") or "@" in model:
        return model
    dated = _DATED.match(model)
    if provider == "bedrock":
        return f"anthropic.{model}-v1:0" if dated else f"anthropic.{model}"
    return f"{dated['base']}@{dated['date']}" if dated else model


@dataclass(frozen=True)
class Connection:
    """How to reach the provider. None: the SDK's own environment variables decide."""

    provider: Provider = "anthropic"
    api_key: str | None = None  # anthropic only
    base_url: str | None = None  # any provider (a proxy, or the tests' fake server)
    region: str | None = None  # bedrock: AWS region; vertex: Google Cloud region
    project_id: str | None = None  # vertex
    access_token: str | None = None  # vertex: a ready OAuth token instead of ADC


def build_client(
    conn: Connection, *, max_retries: int, timeout_s: float, middleware: Sequence[Any]
) -> anthropic.Anthropic | anthropic.AnthropicBedrock | anthropic.AnthropicVertex:
    """The SDK client for `conn`. Raises ValueError / RuntimeError when the provider is not configured
    (no region, no project): the caller reports that as a `config` error, not a crash."""
    import anthropic

    common: dict[str, Any] = {
        "base_url": conn.base_url,
        "max_retries": max_retries,
        "timeout": timeout_s,
        "middleware": list(middleware),
    }
    if conn.provider == "bedrock":
        return anthropic.AnthropicBedrock(aws_region=conn.region, **common)
    if conn.provider == "vertex":
        vertex: dict[str, Any] = {"access_token": conn.access_token}
        if conn.region:
            vertex["region"] = conn.region
        if conn.project_id:
            vertex["project_id"] = conn.project_id
        return anthropic.AnthropicVertex(**vertex, **common)
    return anthropic.Anthropic(api_key=conn.api_key, **common)
