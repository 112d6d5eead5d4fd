"""The Action's side of the runner: its inputs (action.yml declares the same names; a test checks it),
the runner's environment variables, and where downloaded models go."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adr_review.config import REPO_CONFIG_PATH, PromptOverride, RepoConfig, RepoConfigError
from adr_review.core.triggers import ChangedFile, Event
from adr_review.pipeline.plans.folders import FolderCache, Notify
from adr_review.pipeline.ports import (
    AdrIndex,
    GitHubPort,
    LlmPort,
    PullRequestInfo,
    RepoComment,
    RepoFile,
    SyncReport,
)

if TYPE_CHECKING:
    from adr_review.adapters.state_sqlite import SqliteStateStore

INPUTS: Mapping[str, str] = {
    "github-token": "Token for the GitHub API (default: the workflow's GITHUB_TOKEN)",
    "anthropic-api-key": "Anthropic API key; without it recall runs extractive and the blind-spot critics are skipped",
    "adr-paths": "ADR globs, comma or newline separated (default: adr_paths of the repo config)",
    "language": "Comment language: auto, en or ja (default: the repo config's, else auto)",
    "config-path": "Repo config file, read from the default branch",
    "dry-run": "true: render and report, write nothing to GitHub",
    "cache-dir": "Folder for the index, the checkpoints and downloaded ADRs (restore it with actions/cache)",
    "model": "Model for every LLM step (overrides prompts/*/meta.yaml and the repo config)",
    "recall-model": "Model for the recall step",
    "critic-model": "Model for the blind-spot critics",
    "judge-model": "Model for the blind-spot judge",
    "llm-provider": "Where the models run: anthropic, bedrock or vertex (llm.provider; default: the repo config's)",
    "llm-region": "AWS region (bedrock) or Google Cloud region (vertex) (llm.region; default: AWS_REGION / CLOUD_ML_REGION)",
    "vertex-project-id": "Google Cloud project for vertex (llm.project_id; default: the credentials' project)",
    "max-adrs": "Most ADRs reviewed per run; the rest are listed with the command that reviews them (limits.max_adrs_per_run)",
    "spend-per-run-usd": "Model spend cap for one run in USD; past it, model stages are skipped (limits.spend_per_run_usd)",
    "spend-per-month-usd": "Model spend cap per calendar month (UTC) in USD, read from the ledgers of this repository's review comments and the cache (limits.spend_per_month_usd)",
    "guard": "true: the ADR guard reads PRs that change code against the accepted ADRs; false: off (guard.enabled; default: the repo config's, else off)",
}
OUTPUTS: Mapping[str, str] = {
    "comment-urls": "URLs of the ADR comments this run created, edited or found up to date, one per line",
    "citations-json": "JSON list of {adr_path, adr_id, citations[]} for the ADRs reviewed in this run",
    "findings-count": "Number of blind-spot findings shown across the ADRs reviewed in this run",
}
DEFAULTS: Mapping[str, str] = {
    "config-path": REPO_CONFIG_PATH,
    "cache-dir": ".adr-review",
    "dry-run": "false",
}

CRITIC_PROMPTS = ("blindspot-devils-advocate", "blindspot-premortem", "blindspot-adjacent-domain")
LIMIT_INPUTS: Mapping[str, str] = {
    "max-adrs": "max_adrs_per_run",
    "spend-per-run-usd": "spend_per_run_usd",
    "spend-per-month-usd": "spend_per_month_usd",
}
MODEL_INPUTS: Mapping[str, tuple[str, ...]] = {
    "recall-model": ("recall-pre-gate",),
    "critic-model": CRITIC_PROMPTS,
    "judge-model": ("blindspot-judge",),
}
ALL_PROMPTS = ("recall-pre-gate", *CRITIC_PROMPTS, "blindspot-judge", "blindspot-cover-check")

FORK_NOTE = (
    "No comment was posted: this pull request comes from a fork, and on the `pull_request` event GitHub "
    "gives the workflow a read-only token and no secrets. Recall ran extractive (no model); the report "
    "is below. A maintainer can comment `/adr-review` to post it, or see docs/action.md about "
    "`pull_request_target`."
)


def input_env_name(name: str) -> str:
    """How the runner passes an input: INPUT_ + upper case, spaces to underscores, hyphens kept."""
    return "INPUT_" + name.replace(" ", "_").upper()


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class ActionInputs:
    github_token: str | None
    anthropic_api_key: str | None
    adr_paths: tuple[str, ...]
    language: str | None
    config_path: str
    dry_run: bool
    cache_dir: Path
    models: Mapping[str, str]  # prompt name -> model
    llm: Mapping[str, str] = field(default_factory=dict)  # llm.<key> (provider, region, project_id) -> text
    limits: Mapping[str, str] = field(default_factory=dict)  # limits.<key> -> the input's text
    guard: str | None = None  # the `guard` input as written: guard.enabled, validated with the config

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ActionInputs:
        def get(name: str) -> str:
            return (env.get(input_env_name(name)) or DEFAULTS.get(name, "")).strip()

        workspace = Path(env.get("GITHUB_WORKSPACE") or ".")
        cache = Path(get("cache-dir"))
        models: dict[str, str] = {}
        if get("model"):
            models.update(dict.fromkeys(ALL_PROMPTS, get("model")))
        for name, prompts in MODEL_INPUTS.items():
            if get(name):
                models.update(dict.fromkeys(prompts, get(name)))
        return cls(
            github_token=get("github-token") or env.get("GITHUB_TOKEN") or None,
            anthropic_api_key=get("anthropic-api-key") or env.get("ANTHROPIC_API_KEY") or None,
            adr_paths=tuple(p.strip() for p in re.split(r"[,\n]", get("adr-paths")) if p.strip()),
            language=get("language") or None,
            config_path=get("config-path"),
            dry_run=_truthy(get("dry-run")),
            cache_dir=cache if cache.is_absolute() else workspace / cache,
            models=models,
            llm={
                key: value
                for key, value in (
                    ("provider", get("llm-provider")),
                    ("region", get("llm-region")),
                    ("project_id", get("vertex-project-id")),
                )
                if value
            },
            limits={key: get(name) for name, key in LIMIT_INPUTS.items() if get(name)},
            guard=get("guard") or None,
        )

    @property
    def model_available(self) -> bool:
        """A model can be called: an Anthropic API key, or a cloud provider whose own credentials the
        workflow set up (their absence shows on the first call, as a degraded step)."""
        return bool(self.anthropic_api_key) or self.llm.get("provider") in ("bedrock", "vertex")

    def apply(self, config: RepoConfig) -> RepoConfig:
        """The workflow's inputs win over the repo config (they are part of the config hash, so of the key)."""
        update: dict[str, Any] = {}
        if self.adr_paths:
            update["adr_paths"] = list(self.adr_paths)
        if self.language:
            if self.language not in ("auto", "en", "ja"):
                raise RepoConfigError("input language", [f"{self.language!r} is not one of auto, en, ja"])
            update["language"] = self.language
        if self.limits:
            update["limits"] = {**config.limits.model_dump(), **self.limits}  # validated with the rest
        if self.guard is not None:  # "true" / "false" as pydantic reads a bool (else a config error)
            update["guard"] = {**config.guard.model_dump(), "enabled": self.guard}
        if self.models:
            prompts = dict(config.llm.prompts)
            for name, model in self.models.items():
                prompts[name] = (prompts.get(name) or PromptOverride()).model_copy(update={"model": model})
            update["llm"] = config.llm.model_copy(update={"prompts": prompts})
        if self.llm:  # validated with the rest (an unknown provider is a config error)
            update["llm"] = update.get("llm", config.llm).model_copy(update=dict(self.llm))
        if not update:
            return config
        from pydantic import ValidationError

        try:
            return RepoConfig.model_validate({**config.model_dump(), **_dump(update)})
        except ValidationError as exc:
            problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
            raise RepoConfigError("the Action's inputs", problems) from None


def _dump(update: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.model_dump() if hasattr(v, "model_dump") else v) for k, v in update.items()}


@dataclass(frozen=True)
class RunnerEnv:
    event_name: str
    event_path: str
    repository: str
    api_url: str
    server_url: str
    step_summary: str | None
    output: str | None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RunnerEnv:
        missing = [
            k for k in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY") if not env.get(k)
        ]
        if missing:
            raise ActionError(f"not running in GitHub Actions: {', '.join(missing)} not set")
        return cls(
            event_name=env["GITHUB_EVENT_NAME"],
            event_path=env["GITHUB_EVENT_PATH"],
            repository=env["GITHUB_REPOSITORY"],
            api_url=env.get("GITHUB_API_URL") or "https://api.github.com",
            server_url=(env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/"),
            step_summary=env.get("GITHUB_STEP_SUMMARY") or None,
            output=env.get("GITHUB_OUTPUT") or None,
        )


class ActionError(RuntimeError):
    """A failure of the run itself (environment, event file, config): reported as ::error::, exit 1."""

    def __init__(self, message: str, *, file: str | None = None) -> None:
        super().__init__(message)
        self.file = file


def export_model_cache(env: MutableMapping[str, str], cache: Path) -> None:
    """Embedding models (an optional sentence-transformers / ONNX one) and the lexicon download into the
    cached folder: <cache-dir>/models, unless ADR_REVIEW_MODEL_CACHE is set. Set here, not in the image,
    which the App runs too. Variables already set win."""
    models = Path(env.get("ADR_REVIEW_MODEL_CACHE") or cache / "models")
    env.setdefault("ADR_REVIEW_MODEL_CACHE", str(models))
    for var in ("HF_HOME", "SENTENCE_TRANSFORMERS_HOME"):
        env.setdefault(var, str(models / var.lower()))


def read_event_file(event_name: str, event_path: str, repository: str) -> Event:
    """The runner's event payload, read by the one event reader (app/adr_review/core/events.py)."""
    import json

    from adr_review.core.events import EventError, read_event

    try:
        payload = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ActionError(f"cannot read the event file {event_path}: {exc}") from None
    if not isinstance(payload, dict):
        raise ActionError(f"the event file {event_path} is not a JSON object")
    try:
        return read_event(event_name, payload, repo_hint=repository)
    except EventError as exc:
        raise ActionError(str(exc)) from None


# --- the adapters a real run composes (tests inject their own) -----------------------------------

GitHubFactory = Callable[[str | None, str], GitHubPort]  # (token, api_url)
LlmFactory = Callable[[str | None, RepoConfig], LlmPort | None]  # (api key, config)
IndexFactory = Callable[[Path, RepoConfig], AdrIndex]  # (index folder, config) -> an opened index


def default_github_factory(token: str | None, api_url: str) -> GitHubPort:
    from adr_review.adapters.github import GitHubAdapter

    return GitHubAdapter(token, base_url=api_url)


def default_llm_factory(api_key: str | None, config: RepoConfig) -> LlmPort | None:
    """The provider of `config.llm.provider` (the llm-provider input is applied to it); the Claude API
    needs the key, Bedrock and Vertex the workflow's cloud credentials (docs/action.md)."""
    from adr_review.adapters.llm import make_llm
    from adr_review.config import Settings

    return make_llm(Settings().model_copy(update={"anthropic_api_key": api_key}), config)


def default_index_factory(path: Path, config: RepoConfig) -> AdrIndex:
    from adr_review.adapters.index_open import open_index

    return open_index(path, config.retrieval)


def cache_dir(cache: Path) -> Path:
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ActionError(f"cannot create the cache folder {cache}: {exc}") from None
    return cache


def state_store(cache: Path, warn: Callable[[str], None]) -> SqliteStateStore:
    """The cache folder's state store; unusable -> in memory (checkpoints only save re-runs' work)."""
    from adr_review.adapters.state_sqlite import SqliteStateStore, StoreError

    try:
        return SqliteStateStore(cache / "checkpoints.sqlite3")
    except StoreError as exc:
        warn(f"{exc}; this run's stages are not checkpointed")
        return SqliteStateStore(":memory:")


class LazyGitHub:
    """The GitHubPort, its client built on first use: rejecting an event (a bad payload, an unhandled
    event) needs no token and makes no request. Each method of the port, typed, delegated."""

    def __init__(self, make: Callable[[], GitHubPort]) -> None:
        self._make = make
        self._gh: GitHubPort | None = None

    @property
    def client(self) -> GitHubPort:
        if self._gh is None:
            self._gh = self._make()
        return self._gh

    def default_branch(self, repo: str) -> str:
        return self.client.default_branch(repo)

    def pull_request(self, repo: str, number: int) -> PullRequestInfo:
        return self.client.pull_request(repo, number)

    def changed_files(self, repo: str, number: int) -> list[ChangedFile]:
        return self.client.changed_files(repo, number)

    def pull_diff(self, repo: str, number: int) -> str:
        return self.client.pull_diff(repo, number)

    def read_file(self, repo: str, path: str, ref: str) -> bytes | None:
        return self.client.read_file(repo, path, ref)

    def list_files(self, repo: str, ref: str, folders: Sequence[str]) -> list[RepoFile]:
        return self.client.list_files(repo, ref, folders)

    def read_blob(self, repo: str, blob_sha: str) -> bytes:
        return self.client.read_blob(repo, blob_sha)

    def find_comment(self, repo: str, number: int, adr_path: str) -> RepoComment | None:
        return self.client.find_comment(repo, number, adr_path)

    def pr_comments(self, repo: str, number: int) -> list[RepoComment]:
        return self.client.pr_comments(repo, number)

    def our_comments(self, repo: str, number: int) -> list[RepoComment]:
        return self.client.our_comments(repo, number)

    def recent_pulls(self, repo: str, since: float) -> list[int]:
        return self.client.recent_pulls(repo, since)

    def our_comments_since(self, repo: str, since: float) -> list[RepoComment]:
        return self.client.our_comments_since(repo, since)

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> RepoComment:
        return self.client.edit_comment(repo, number, comment_id, body)

    def create_comment(self, repo: str, number: int, body: str) -> RepoComment:
        return self.client.create_comment(repo, number, body)

    def add_reaction(self, repo: str, comment_id: int, content: str) -> None:
        self.client.add_reaction(repo, comment_id, content)

    def permission(self, repo: str, login: str) -> str:
        return self.client.permission(repo, login)


def folder_cache(
    cache: Path,
    notify: Notify,
    index_factory: IndexFactory,
    on_synced: Callable[[str, str, SyncReport, int], None],
) -> FolderCache:
    """The run's ADR folders: blobs from the cache folder (downloaded once), indexes inside it;
    `on_synced(adr_dir, ref, report, ADRs downloaded)` after each index sync."""
    from adr_review.adapters.remote_folder import DiskBlobCache, load_remote_folder
    from adr_review.pipeline.keys import index_slot

    blobs = DiskBlobCache(cache / "blobs")
    return FolderCache(
        lambda g, r, ref, d: load_remote_folder(g, r, ref, d, blobs),
        lambda r, d, config: index_factory(cache / "index" / index_slot(r, d), config),
        notify=notify,
        on_synced=lambda d, ref, s: on_synced(d, ref, s, blobs.downloaded),
    )
