"""Process settings (env, pydantic-settings) and repo config (.github/adr-review.yml, pydantic).

Only this module and the entrypoints read the environment; the core and the pipeline get plain values.
Helpers extend these models with their own nested sections; keep defaults documented in docs/config.md.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_ADR_GLOBS = (
    "docs/adr/**",
    "docs/decisions/**",
    "doc/adr/**",
    "adr/**",
    "docs/architecture/decisions/**",
)


class RetrievalConfig(BaseModel):
    """Hybrid retrieval knobs. Defaults were chosen by measurement on the corpora: docs/retrieval.md."""

    model_config = ConfigDict(extra="forbid")
    top_n: int = Field(default=20, ge=1)
    embedding: str = "offline-hash"  # see docs/embeddings.md
    store_dir: str | None = None  # index location; None: Settings.store_dir (.adr-review/)
    # fused = (1 - dense_weight - title_weight) * bm25/top + dense_weight * minmax(cosine) + title_weight * title
    dense_weight: float = Field(default=0.2, ge=0, le=1)
    title_weight: float = Field(default=0.25, ge=0, le=1)
    # OR-gate: qualified when cosine >= qualify_cosine OR bm25/top >= qualify_bm25_rel.
    qualify_cosine: float | None = None  # None: the embedding's own default (cosine scales differ)
    qualify_bm25_rel: float = Field(default=0.6, ge=0, le=1)
    mmr_lambda: float = Field(default=1.0, ge=0, le=1)  # 1.0: no diversity re-ordering
    chunk_target: int = Field(default=2000, ge=200)  # characters per section chunk
    chunk_max: int = Field(default=4000, ge=200)
    bm25_k1: float = Field(default=1.5, gt=0)
    bm25_b: float = Field(default=0.75, ge=0, le=1)


class RecallConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    max_citations: int = 5
    llm: bool = True  # False: always extractive, even with an API key
    # Extractive relevance bands on a candidate's fused score relative to the best candidate's.
    extractive_high: float = 0.75
    extractive_med: float = 0.4


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")
    input: float
    output: float
    cache_read: float
    cache_write: float  # 5-minute ephemeral cache write


# fnmatch pattern -> price; the first matching pattern wins, so list specific ones first.
# Source: platform.claude.com pricing pages (November 2026); Haiku 5.5 at its <=100k-token-prompt tier.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "claude-fable-5-1*": ModelPrice(input=10, output=50, cache_read=0.25, cache_write=12.5),
    "claude-fable-5*": ModelPrice(input=10, output=50, cache_read=1.0, cache_write=12.5),
    "claude-opus-5-5*": ModelPrice(input=4, output=20, cache_read=0.2, cache_write=5.0),
    "claude-opus-5*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4-8*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-sonnet-5-5*": ModelPrice(input=2, output=10, cache_read=0.1, cache_write=2.5),
    "claude-sonnet-5*": ModelPrice(input=2, output=10, cache_read=0.2, cache_write=2.5),
    "claude-haiku-5-5*": ModelPrice(input=0.1, output=0.5, cache_read=0.01, cache_write=0.125),
    "claude-opus-4-5*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4-6*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4-7*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4*": ModelPrice(input=15, output=75, cache_read=1.5, cache_write=18.75),
    "claude-sonnet-4*": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75),
    "claude-3-7-sonnet*": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75),
    "claude-haiku-4*": ModelPrice(input=1, output=5, cache_read=0.1, cache_write=1.25),
    "claude-3-5-haiku*": ModelPrice(input=0.8, output=4, cache_read=0.08, cache_write=1.0),
}

# Models that still take sampling parameters; newer ones (Opus 4.7+, Sonnet 5+, Haiku 5.5, Fable) reject
# `temperature` with a 400.
DEFAULT_TEMPERATURE_MODELS = [
    "claude-3*",
    "claude-sonnet-4*",
    "claude-haiku-4*",
    "claude-opus-4-2025*",
    "claude-opus-4-0*",
    "claude-opus-4-1*",
    "claude-opus-4-5*",
    "claude-opus-4-6*",
]


class PromptOverride(BaseModel):
    """Per-prompt replacement of prompts/<name>/meta.yaml values."""

    model_config = ConfigDict(extra="forbid")
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None


class LlmSettings(BaseModel):
    """How the Anthropic adapter calls models and prices the calls (repo config `llm:`)."""

    model_config = ConfigDict(extra="forbid")
    timeout_s: float = Field(default=60.0, gt=0)  # one HTTP attempt
    max_retries: int = Field(default=2, ge=0)  # SDK retries on 408/409/429/5xx/529
    total_budget_s: float = Field(default=150.0, gt=0)  # one call, all attempts and back-off included
    temperature_models: list[str] = Field(default_factory=lambda: list(DEFAULT_TEMPERATURE_MODELS))
    prices: dict[str, ModelPrice] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    prompts: dict[str, PromptOverride] = Field(default_factory=dict)  # prompt name -> override
    structured_output: bool = True  # send output_schema.json as output_config.format (json_schema)

    def accepts_temperature(self, model: str) -> bool:
        return any(fnmatch.fnmatchcase(model, p) for p in self.temperature_models)

    def price_for(self, model: str) -> ModelPrice | None:
        return next((price for pat, price in self.prices.items() if fnmatch.fnmatchcase(model, pat)), None)


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
    llm: LlmSettings = Field(default_factory=LlmSettings)


REPO_CONFIG_PATH = ".github/adr-review.yml"


class RepoConfigError(ValueError):
    """The repo config file exists but is not valid; the message names the file and each problem."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(f"{source} is not a valid adr-review config: " + "; ".join(problems))
        self.source = source
        self.problems = problems


def parse_repo_config(raw: bytes | str, source: str = REPO_CONFIG_PATH) -> RepoConfig:
    """YAML text -> RepoConfig; an empty file is the defaults. Raises RepoConfigError, never guesses."""
    import yaml
    from pydantic import ValidationError

    try:
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
        data = yaml.safe_load(text)
    except UnicodeDecodeError:
        raise RepoConfigError(source, ["not UTF-8 text"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc
        raise RepoConfigError(source, [f"{where}invalid YAML ({problem})"]) from None
    if data is None:
        return RepoConfig()
    if not isinstance(data, dict):
        raise RepoConfigError(source, [f"the top level must be a mapping, not {type(data).__name__}"])
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()]
        raise RepoConfigError(source, problems) from None


class Settings(BaseSettings):
    """Process-level settings from the environment (ADR_REVIEW_* and the usual API key names)."""

    model_config = SettingsConfigDict(env_prefix="ADR_REVIEW_", extra="ignore")
    anthropic_api_key: str | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(default=None, validation_alias="ANTHROPIC_BASE_URL")
    store_dir: Path = Path(".adr-review")
    # Kill switch: ADR_REVIEW_RECALL_ENABLED or the seed's RECALL_ENABLED.
    recall_enabled: bool = Field(
        default=True, validation_alias=AliasChoices("ADR_REVIEW_RECALL_ENABLED", "RECALL_ENABLED")
    )
    log_level: str = "INFO"


class AppSettings(BaseSettings):
    """The GitHub App server (`adr-review serve`): ADR_REVIEW_APP_* / ADR_REVIEW_* from the environment.

    See docs/app.md. The webhook secret is required unless the server runs with --insecure-no-secret.
    """

    model_config = SettingsConfigDict(env_prefix="ADR_REVIEW_", extra="ignore")
    app_id: str | None = Field(
        default=None, validation_alias=AliasChoices("ADR_REVIEW_APP_ID", "GITHUB_APP_ID")
    )
    app_private_key: str | None = Field(
        default=None, validation_alias=AliasChoices("ADR_REVIEW_APP_PRIVATE_KEY", "GITHUB_APP_PRIVATE_KEY")
    )
    app_private_key_path: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("ADR_REVIEW_APP_PRIVATE_KEY_PATH", "GITHUB_APP_PRIVATE_KEY_PATH"),
    )
    webhook_secret: str | None = Field(
        default=None, validation_alias=AliasChoices("ADR_REVIEW_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET")
    )
    github_api_url: str = Field(
        default="https://api.github.com",
        validation_alias=AliasChoices("ADR_REVIEW_GITHUB_API_URL", "GITHUB_API_URL"),
    )
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 2  # worker threads per process
    db_path: Path | None = None  # default: <store_dir>/app.sqlite3
    store_dir: Path = Path(".adr-review")
    lease_ttl_s: float = 300.0  # a dead worker's run is reclaimed after this; renewed every ttl/3
    max_attempts: int = 3  # then the run is failed with its last error
    retry_backoff_s: float = 30.0
    stall_after_s: float = 3600.0  # watchdog: a running run without stage progress this long fails
    catch_up: bool = True  # list recent App deliveries on start and redeliver failed ones we lack
    catch_up_window_s: float = 3 * 86400.0  # GitHub keeps deliveries for 3 days
    max_body_bytes: int = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
