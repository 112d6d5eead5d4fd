"""The process settings' one definition, and a reader of it that does not import pydantic-settings.

`Settings` (settings_env.py, pydantic-settings) reads these fields from the environment on every path
that needs the full stack; an offline recall reads them here instead (pydantic-settings is about 0.1 s
of a recall process's imports). Re-exported by `adr_review.config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

Provider = Literal["anthropic", "bedrock", "vertex"]


class ProcessSettings(BaseModel):
    """The process settings' one definition (ADR_REVIEW_* and the usual API key names).

    `Settings` (pydantic-settings) reads it from the environment; `process_settings` reads the same
    fields without importing pydantic-settings (0.1 s of a recall process).
    """

    model_config = ConfigDict(extra="ignore")
    anthropic_api_key: str | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(default=None, validation_alias="ANTHROPIC_BASE_URL")
    # ADR_REVIEW_LLM_PROVIDER: anthropic | bedrock | vertex, over the repo config's `llm.provider` (the
    # operator holds the credentials). Bedrock and Vertex read their own SDK variables: docs/config.md.
    llm_provider: Provider | None = None
    # ADR_REVIEW_VERTEX_ACCESS_TOKEN: a ready Google OAuth access token; unset, Vertex uses Application
    # Default Credentials (google-auth, the `vertex` extra).
    vertex_access_token: str | None = None
    store_dir: Path = Path(".adr-review")
    # Kill switch: ADR_REVIEW_RECALL_ENABLED or the seed's RECALL_ENABLED.
    recall_enabled: bool = Field(
        default=True, validation_alias=AliasChoices("ADR_REVIEW_RECALL_ENABLED", "RECALL_ENABLED")
    )
    log_level: str = "INFO"


ENV_PREFIX = "ADR_REVIEW_"


def env_names(model: type[BaseModel], name: str) -> tuple[str, ...]:
    """The variables a field is read from: its validation alias(es), else ADR_REVIEW_<NAME>."""
    alias = model.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    if isinstance(alias, str):
        return (alias,)
    return (ENV_PREFIX + name.upper(),)


def process_settings(environ: Mapping[str, str]) -> ProcessSettings:
    """ProcessSettings from an environment as pydantic-settings reads these scalar fields: names
    case-insensitive, the first alias set wins, values validated by the model (a test pins it equal
    to `Settings()`)."""
    folded = {key.lower(): value for key, value in environ.items()}
    data: dict[str, str] = {}
    for name in ProcessSettings.model_fields:
        found = next((env for env in env_names(ProcessSettings, name) if env.lower() in folded), None)
        if found is not None:
            alias = ProcessSettings.model_fields[name].validation_alias
            data[found if alias is not None else name] = folded[found.lower()]
    return ProcessSettings.model_validate(data)
