"""Process settings (env, pydantic-settings) and repo config (.github/adr-review.yml, pydantic).

Only this module and the entrypoints read the environment; the core and the pipeline get plain values.
Helpers extend these models with their own nested sections; keep defaults documented in docs/config.md.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_ADR_GLOBS = (
    "docs/adr/**",
    "docs/decisions/**",
    "doc/adr/**",
    "adr/**",
    "docs/architecture/decisions/**",
)


class RetrievalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    top_n: int = 20
    embedding: str = "offline-hash"  # see docs/embeddings.md


class RecallConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    max_citations: int = 5


class BlindSpotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    adjacent_domain: bool = False
    max_findings: int = 10


class RepoConfig(BaseModel):
    """`.github/adr-review.yml`, read from the default branch."""

    model_config = ConfigDict(extra="forbid")
    adr_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_ADR_GLOBS))
    language: str = "auto"  # auto | en | ja
    review_drafts: bool = False
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    blindspot: BlindSpotConfig = Field(default_factory=BlindSpotConfig)


class Settings(BaseSettings):
    """Process-level settings from the environment (ADR_REVIEW_* and the usual API key names)."""

    model_config = SettingsConfigDict(env_prefix="ADR_REVIEW_", extra="ignore")
    anthropic_api_key: str | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(default=None, validation_alias="ANTHROPIC_BASE_URL")
    store_dir: Path = Path(".adr-review")
    recall_enabled: bool = True
    log_level: str = "INFO"
