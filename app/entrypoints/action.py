"""`adr-review action`: the GitHub Action. A thin adapter from the runner's environment to the pipeline.

Reads GITHUB_EVENT_NAME / GITHUB_EVENT_PATH / GITHUB_REPOSITORY / INPUT_*, talks to GITHUB_API_URL,
decides with app/core/triggers.py, reviews each changed ADR with app/pipeline/review.py, upserts one
comment per ADR, and reports through the runner's file commands: $GITHUB_STEP_SUMMARY, $GITHUB_OUTPUT
(`name<<DELIM` blocks) and `::error::` annotations on stdout.

Idempotent: before reviewing, the ADR's existing comment is read; when its marker already carries the
run key of these inputs, nothing is recomputed or posted (no LLM call). A comment command forces a new
key. The index, the checkpoint store and downloaded ADR blobs live in the cache folder
($GITHUB_WORKSPACE/.adr-review), which the workflow restores with actions/cache.

Everything external is injectable (`github_factory`, `llm_factory`, `index_factory`) for the tests.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import posixpath
import re
import sys
import uuid
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from app.adapters.remote_folder import BlobCache, load_remote_folder
from app.config import REPO_CONFIG_PATH, PromptOverride, RepoConfig, RepoConfigError, parse_repo_config
from app.core.adr import Adr
from app.core.results import Review
from app.core.triggers import (
    CommentEvent,
    Decision,
    Event,
    PullRequestEvent,
    ReindexEvent,
    adr_glob_roots,
    changed_adrs,
    decide,
    no_adr_summary,
    screen,
    select_adrs,
)
from app.pipeline.ports import AdrIndex, GitHubError, GitHubPort, LlmPort, PullRequestInfo, SyncReport
from app.pipeline.retrieval import UnavailableIndex

log = logging.getLogger("adr-review.action")

# --------------------------------------------------------------------------------------------------
# Inputs and outputs (action.yml declares the same names; tests/entrypoints/test_action.py checks it)

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
MODEL_INPUTS: Mapping[str, tuple[str, ...]] = {
    "recall-model": ("recall-pre-gate",),
    "critic-model": CRITIC_PROMPTS,
    "judge-model": ("blindspot-judge",),
}
ALL_PROMPTS = ("recall-pre-gate", *CRITIC_PROMPTS, "blindspot-judge")

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
        )

    def apply(self, config: RepoConfig) -> RepoConfig:
        """The workflow's inputs win over the repo config (they are part of the config hash, so of the key)."""
        update: dict[str, Any] = {}
        if self.adr_paths:
            update["adr_paths"] = list(self.adr_paths)
        if self.language:
            if self.language not in ("auto", "en", "ja"):
                raise ActionError(f"input language: {self.language!r} is not one of auto, en, ja")
            update["language"] = self.language
        if self.models:
            prompts = dict(config.llm.prompts)
            for name, model in self.models.items():
                prompts[name] = (prompts.get(name) or PromptOverride()).model_copy(update={"model": model})
            update["llm"] = config.llm.model_copy(update={"prompts": prompts})
        return RepoConfig.model_validate({**config.model_dump(), **_dump(update)}) if update else config


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


# --------------------------------------------------------------------------------------------------
# Reporting through the runner's file commands


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


class Reporter:
    def __init__(self, runner: RunnerEnv | None, stdout: TextIO) -> None:
        self.runner = runner
        self.stdout = stdout
        self.summary: list[str] = []
        self.outputs: dict[str, str] = {"comment-urls": "", "citations-json": "[]", "findings-count": "0"}
        self.failed = False

    def line(self, text: str) -> None:
        print(text, file=self.stdout, flush=True)

    def annotate(
        self, level: str, message: str, *, file: str | None = None, title: str | None = None
    ) -> None:
        props = []
        if file:
            props.append(f"file={escape_property(file)}")
        if title:
            props.append(f"title={escape_property(title)}")
        prefix = f"::{level} {','.join(props)}::" if props else f"::{level}::"
        self.line(prefix + escape_data(message))

    def error(self, message: str, *, file: str | None = None, title: str | None = None) -> None:
        self.failed = True
        self.annotate("error", message, file=file, title=title)

    def flush(self) -> None:
        """Write the step summary and the outputs; without a runner (local run) print the summary."""
        text = "\n".join(self.summary).rstrip() + "\n"
        if self.runner and self.runner.step_summary:
            with open(self.runner.step_summary, "a", encoding="utf-8") as fh:
                fh.write(text)
        if self.runner and self.runner.output:
            with open(self.runner.output, "a", encoding="utf-8") as fh:
                for name, value in self.outputs.items():
                    fh.write(output_block(name, value))


def output_block(name: str, value: str) -> str:
    """The multi-line `name<<DELIM` form, with a delimiter that cannot occur in the value."""
    delim = f"ghadelimiter_{uuid.uuid4().hex}"
    while delim in value:
        delim = f"ghadelimiter_{uuid.uuid4().hex}"
    return f"{name}<<{delim}\n{value}\n{delim}\n"


# --------------------------------------------------------------------------------------------------
# Factories (production defaults; tests inject their own)

GitHubFactory = Callable[[str | None, str], GitHubPort]  # (token, api_url)
LlmFactory = Callable[[str | None, RepoConfig], LlmPort | None]  # (api key, config)
IndexFactory = Callable[[Path, RepoConfig], AdrIndex]  # (index folder, config) -> an opened index


def default_github_factory(token: str | None, api_url: str) -> GitHubPort:
    from app.adapters.github import GitHubAdapter

    return GitHubAdapter(token, base_url=api_url)


def default_llm_factory(api_key: str | None, config: RepoConfig) -> LlmPort | None:
    if not api_key:
        return None
    from app.adapters.llm import AnthropicLlm

    return AnthropicLlm(api_key, config.llm, base_url=os.environ.get("ANTHROPIC_BASE_URL") or None)


def default_index_factory(path: Path, config: RepoConfig) -> AdrIndex:
    """The hybrid Chroma index persisted in `path` (one per ADR folder, inside the cached folder).

    Fixed collection name: actions/cache may restore the folder under another workspace path."""
    from app.pipeline.retrieval import open_index

    return open_index(path, config.retrieval)


class DiskBlobCache(BlobCache):
    """Blobs kept in the cache folder between runs: git blob ids are content hashes, so an entry never
    goes stale, and a re-index downloads only the ADRs that changed (GITHUB_TOKEN: 1,000 requests/hour)."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.downloaded = 0

    def get(self, gh: GitHubPort, repo: str, sha: str) -> bytes:
        path = self.root / sha[:2] / sha
        if path.is_file():
            data = path.read_bytes()
            if _git_blob_sha(data) == sha:
                return data
        data = gh.read_blob(repo, sha)
        self.downloaded += 1
        if _git_blob_sha(data) == sha:  # never store what does not match its name
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return data


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


# --------------------------------------------------------------------------------------------------
# The run


@dataclass
class AdrOutcome:
    path: str
    result: str  # created | edited | unchanged | not-posted | failed
    url: str = ""
    review: Review | None = None
    error: str | None = None


@dataclass
class Context:
    runner: RunnerEnv
    inputs: ActionInputs
    reporter: Reporter
    gh: GitHubPort
    config: RepoConfig
    dry_run: bool
    llm_factory: LlmFactory
    index_factory: IndexFactory
    outcomes: list[AdrOutcome] = field(default_factory=list)


def run_action(
    env: Mapping[str, str],
    *,
    dry_run: bool = False,
    github_factory: GitHubFactory | None = None,
    llm_factory: LlmFactory | None = None,
    index_factory: IndexFactory | None = None,
    stdout: TextIO | None = None,
) -> int:
    """One Action run. 0: done (also when there was nothing to do); 1: the run failed (reported)."""
    reporter = Reporter(None, stdout or sys.stdout)
    try:
        runner = RunnerEnv.from_env(env)
        reporter.runner = runner
        inputs = ActionInputs.from_env(env)
        if env is os.environ:  # a real run: the process environment is ours to set
            export_model_cache(os.environ, inputs.cache_dir)
        _run(
            runner,
            inputs,
            reporter,
            dry_run=dry_run or inputs.dry_run,
            github_factory=github_factory or default_github_factory,
            llm_factory=llm_factory or default_llm_factory,
            index_factory=index_factory or default_index_factory,
        )
    except ActionError as exc:
        reporter.error(str(exc), file=exc.file, title="adr-review")
        reporter.summary.append(f"**adr-review failed:** {_md_text(str(exc))}")
    except GitHubError as exc:
        reporter.error(str(exc), title="adr-review: GitHub API")
        reporter.summary.append(f"**adr-review failed:** {_md_text(str(exc))}")
    except Exception as exc:  # the last line of defence: report, never a bare traceback only
        log.exception("internal error")
        reporter.error(f"internal error: {type(exc).__name__}: {exc}", title="adr-review")
        reporter.summary.append(f"**adr-review failed:** internal error ({_md_text(type(exc).__name__)})")
    try:
        reporter.flush()
    except OSError as exc:
        reporter.error(f"cannot write the step summary or outputs: {exc}")
    return 1 if reporter.failed else 0


def _run(
    runner: RunnerEnv,
    inputs: ActionInputs,
    reporter: Reporter,
    *,
    dry_run: bool,
    github_factory: GitHubFactory,
    llm_factory: LlmFactory,
    index_factory: IndexFactory,
) -> None:
    event = _read_event(runner)
    early = screen(event)
    if early is not None:
        _finish(reporter, early.summary)
        return
    gh = github_factory(inputs.github_token, runner.api_url)
    default_branch = getattr(event, "default_branch", "") or gh.default_branch(runner.repository)
    config = inputs.apply(_load_config(gh, runner.repository, default_branch, inputs.config_path))
    decision = decide(event, review_drafts=config.review_drafts)
    if decision.needs_permission_check and isinstance(event, CommentEvent):
        permission = gh.permission(runner.repository, event.sender.login)
        decision = decide(event, review_drafts=config.review_drafts, permission=permission)
    ctx = Context(runner, inputs, reporter, gh, config, dry_run, llm_factory, index_factory)
    if dry_run:
        reporter.line("adr-review: dry run: nothing is written to GitHub.")
    if decision.kind in ("ignore", "deny", "help"):
        _respond(ctx, event, decision)
        _finish(reporter, decision.summary)
    elif decision.kind == "reindex":
        assert isinstance(event, ReindexEvent)
        _reindex(ctx, default_branch, decision)
    else:
        assert isinstance(event, PullRequestEvent | CommentEvent)
        _respond(ctx, event, decision)
        _review_pr(ctx, event, decision)


def _read_event(runner: RunnerEnv) -> Event:
    from app.adapters.events import EventError, parse_event

    try:
        payload = json.loads(Path(runner.event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ActionError(f"cannot read the event file {runner.event_path}: {exc}") from None
    if not isinstance(payload, dict):
        raise ActionError(f"the event file {runner.event_path} is not a JSON object")
    try:
        return parse_event(runner.event_name, payload, repo_hint=runner.repository)
    except EventError as exc:
        raise ActionError(str(exc)) from None


def _load_config(gh: GitHubPort, repo: str, ref: str, path: str) -> RepoConfig:
    """The repo config from the default branch (never from the PR head); absent -> the defaults."""
    raw = gh.read_file(repo, path, ref)
    if raw is None:
        return RepoConfig()
    try:
        return parse_repo_config(raw, path)
    except RepoConfigError as exc:
        raise ActionError(f"{exc} (read from {ref})", file=path) from None


def _respond(ctx: Context, event: Event, decision: Decision) -> None:
    """👀 on an accepted command, and the reply (help, denial) as its own comment."""
    if not isinstance(event, CommentEvent) or ctx.dry_run:
        if decision.reply and isinstance(event, CommentEvent):
            ctx.reporter.line("adr-review: dry run: would reply:\n" + decision.reply)
        return
    repo = ctx.runner.repository
    if decision.react:
        try:
            ctx.gh.add_reaction(repo, event.comment_id, "eyes")
        except GitHubError as exc:  # a missing 👀 must not stop the review
            ctx.reporter.annotate("warning", str(exc))
    if decision.reply:
        ctx.gh.create_comment(repo, event.number, decision.reply)


def _finish(reporter: Reporter, summary: str) -> None:
    reporter.line(summary)
    reporter.summary.append(_md_text(summary))


# --------------------------------------------------------------------------------------------------
# Review


def _review_pr(ctx: Context, event: PullRequestEvent | CommentEvent, decision: Decision) -> None:
    from app.adapters.adr_files import is_adr_candidate
    from app.adapters.store import MemoryStore, SqliteStore, StoreError
    from app.core.render import render_step_summary
    from app.pipeline.review import ReviewTarget

    repo = ctx.runner.repository
    if isinstance(event, PullRequestEvent):
        pr = PullRequestInfo(
            repo,
            event.number,
            event.head_sha,
            event.base_sha,
            event.base_ref,
            event.head_repo,
            event.draft,
            "open",
        )
    else:
        pr = ctx.gh.pull_request(repo, event.number)
        if pr.state != "open":
            _finish(ctx.reporter, f"adr-review: #{pr.number} is {pr.state}; nothing to do.")
            return
    files = ctx.gh.changed_files(repo, pr.number)
    adrs = changed_adrs(files, ctx.config.adr_paths, accept=is_adr_candidate)
    if not adrs:
        _finish(ctx.reporter, no_adr_summary(pr.number, len(files), ctx.config.adr_paths))
        return
    ctx.reporter.line(decision.summary)
    ctx.reporter.line(f"adr-review: {len(adrs)} ADR(s) changed: {', '.join(f.path for f in adrs)}")
    nonce = f"comment-{event.comment_id}" if isinstance(event, CommentEvent) and decision.forced else None

    cache = ctx.inputs.cache_dir
    _prepare_cache(cache)
    llm = None if decision.read_only else ctx.llm_factory(ctx.inputs.anthropic_api_key, ctx.config)
    try:
        store: Any = SqliteStore(cache / "checkpoints.sqlite3")
    except StoreError as exc:  # checkpoints only save re-runs' work: review without them
        ctx.reporter.annotate("warning", f"{exc}; this run's stages are not checkpointed")
        store = MemoryStore()
    blobs = DiskBlobCache(cache / "blobs")
    link_base = f"{ctx.runner.server_url}/{repo}/blob/{pr.base_sha}"
    folders: dict[str, tuple[list[Adr], AdrIndex]] = {}
    try:
        for f in adrs:
            content = ctx.gh.read_file(repo, f.path, pr.head_sha)
            if content is None:
                ctx.reporter.annotate(
                    "warning", f"{f.path} is not in {pr.head_sha[:12]}; skipped", file=f.path
                )
                continue
            target = ReviewTarget(
                repo,
                pr.number,
                pr.head_sha,
                pr.base_sha,
                f.path,
                content,
                force_nonce=nonce,
                stages=decision.stages,
            )
            outcome = _review_one(ctx, target, llm, store, blobs, folders, pr, link_base, decision)
            ctx.outcomes.append(outcome)
    finally:
        if hasattr(store, "close"):
            store.close()
    reviews = [o.review for o in ctx.outcomes if o.review is not None]
    _report(ctx, decision, reviews, render_step_summary, link_base)


def _review_one(
    ctx: Context,
    target: Any,
    llm: LlmPort | None,
    store: Any,
    blobs: DiskBlobCache,
    folders: dict[str, tuple[list[Adr], AdrIndex]],
    pr: PullRequestInfo,
    link_base: str,
    decision: Decision,
) -> AdrOutcome:
    from app.core.render import render_comment
    from app.pipeline.review import ReviewDeps, prompts_hash, review_many, run_key_for

    repo = ctx.runner.repository
    path = target.adr_path
    key = run_key_for(target, ctx.config, prompts_hash(), online=llm is not None)
    writes = not (ctx.dry_run or decision.read_only)
    try:
        if writes:
            existing = ctx.gh.find_comment(repo, pr.number, path)
            if existing is not None and existing.marker_key == key:
                ctx.reporter.line(
                    f"adr-review: {path}: comment already up to date ({key}); nothing recomputed."
                )
                return AdrOutcome(path, "unchanged", existing.html_url)
        adr_dir = posixpath.dirname(path)
        if adr_dir not in folders:
            folders[adr_dir] = _folder_index(ctx, pr.base_sha, adr_dir, blobs)
        folder, index = folders[adr_dir]
        deps = ReviewDeps(
            index=index,
            folder=folder,
            llm=llm,
            store=store,
            config=ctx.config,
            link_base=link_base,
            adr_dir=adr_dir,
        )
        (review,) = review_many([target], deps)
        body = render_comment(review, link_base=link_base)
        if review.error:
            ctx.reporter.annotate(
                "error", f"{path}: {review.error}", file=path, title="adr-review: cannot review"
            )
        if not writes:
            ctx.reporter.line(
                f"adr-review: {path}: comment not posted ({'dry run' if ctx.dry_run else 'fork'}):"
            )
            ctx.reporter.line(body)
            return AdrOutcome(path, "not-posted", review=review)
        comment, created = ctx.gh.upsert_comment(repo, pr.number, path, body)
        result = "created" if created else "edited"
        ctx.reporter.line(f"adr-review: {path}: comment {result}: {comment.html_url}")
        return AdrOutcome(path, result, comment.html_url, review=review)
    except GitHubError as exc:
        ctx.reporter.error(f"{path}: {exc}", file=path, title="adr-review: GitHub API")
        return AdrOutcome(path, "failed", error=str(exc))


def _folder_index(ctx: Context, ref: str, adr_dir: str, blobs: DiskBlobCache) -> tuple[list[Adr], AdrIndex]:
    """The ADR folder at `ref` (downloaded blobs reused from the cache) and its index, synced."""
    folder, errors = load_remote_folder(ctx.gh, ctx.runner.repository, ref, adr_dir, blobs)
    for err in errors[:20]:
        ctx.reporter.annotate("warning", f"not indexed: {err}")
    path = index_dir(ctx.inputs.cache_dir, ctx.runner.repository, adr_dir)
    try:
        index = ctx.index_factory(path, ctx.config)
        report = index.sync(folder)
    except Exception as exc:  # degrade: recall says the index failed, the review still posts
        log.exception("index unavailable")
        reason = f"the ADR index could not be built ({type(exc).__name__}: {exc})"
        ctx.reporter.annotate("warning", f"{adr_dir or '/'}: {reason}")
        return folder, UnavailableIndex(reason)
    ctx.reporter.line(_sync_line(adr_dir, ref, report, blobs))
    return folder, index


def index_dir(cache: Path, repo: str, adr_dir: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{repo}/{adr_dir or '_root'}").strip("_")
    return cache / "index" / slug


def _sync_line(adr_dir: str, ref: str, r: SyncReport, blobs: DiskBlobCache) -> str:
    return (
        f"adr-review: index {adr_dir or '/'}@{ref[:12]}: +{r.added} ~{r.updated} -{r.removed} ={r.unchanged}"
        f" ({r.embedding}, {r.seconds:.1f}s{', rebuilt' if r.rebuilt else ''}; {blobs.downloaded} ADR(s) downloaded)"
    )


def _prepare_cache(cache: Path) -> None:
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ActionError(f"cannot create the cache folder {cache}: {exc}") from None


def export_model_cache(env: MutableMapping[str, str], cache: Path) -> None:
    """Embedding models (an optional sentence-transformers / ONNX one) download into the cached folder:
    ADR_REVIEW_MODEL_CACHE (set in the image), else <cache-dir>/models. Variables already set win."""
    models = Path(env.get("ADR_REVIEW_MODEL_CACHE") or cache / "models")
    for var in ("HF_HOME", "SENTENCE_TRANSFORMERS_HOME"):
        env.setdefault(var, str(models / var.lower()))


def _report(
    ctx: Context, decision: Decision, reviews: Sequence[Review], render_summary: Any, link_base: str
) -> None:
    """Outputs, and the job summary: the reviews as the renderer shows them, then this run's comments."""
    from app.core.render import sanitize_inline

    rep = ctx.reporter
    rep.outputs["comment-urls"] = "\n".join(o.url for o in ctx.outcomes if o.url)
    rep.outputs["citations-json"] = citations_json(reviews)
    rep.outputs["findings-count"] = str(sum(len(r.blindspots.findings) for r in reviews if r.blindspots))
    if decision.read_only:
        rep.summary += [f"> {FORK_NOTE}", ""]
    if reviews:
        rep.summary += [render_summary(reviews, link_base=link_base).rstrip(), ""]
    rep.summary += [
        "### adr-review run",
        "",
        _md_text(decision.summary),
        "",
        "| ADR | Comment |",
        "|:--|:--|",
    ]
    for o in ctx.outcomes:
        where = f"[{o.result}]({o.url})" if o.url else o.result
        if o.error:
            where += f": {sanitize_inline(o.error, 300)}"
        rep.summary.append(f"| {sanitize_inline(o.path, 300)} | {where} |")
    counts: dict[str, int] = {}
    for o in ctx.outcomes:
        counts[o.result] = counts.get(o.result, 0) + 1
    rep.line("adr-review: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ".")


def citations_json(reviews: Sequence[Review]) -> str:
    """The `citations-json` output; citation paths are repo-relative (Citation.path is folder-relative)."""
    from app.core.serde import to_dict

    items = []
    for r in reviews:
        citations = []
        for c in r.recall.citations if r.recall else ():
            d = to_dict(c)
            d["path"] = posixpath.join(r.adr_dir, c.path) if r.adr_dir else c.path
            citations.append(d)
        items.append({"adr_path": r.adr_path, "adr_id": r.adr_id, "error": r.error, "citations": citations})
    return json.dumps(items, ensure_ascii=False)


# --------------------------------------------------------------------------------------------------
# Re-index (schedule / workflow_dispatch)


def _reindex(ctx: Context, default_branch: str, decision: Decision) -> None:
    from app.adapters.adr_files import is_adr_candidate

    repo = ctx.runner.repository
    _prepare_cache(ctx.inputs.cache_dir)
    globs = ctx.config.adr_paths
    listed = ctx.gh.list_files(repo, default_branch, adr_glob_roots(globs))
    paths = select_adrs([f.path for f in listed], globs, accept=is_adr_candidate)
    dirs = sorted({posixpath.dirname(p) for p in paths})
    ctx.reporter.line(decision.summary)
    blobs = DiskBlobCache(ctx.inputs.cache_dir / "blobs")
    rows = []
    for adr_dir in dirs:
        folder, _index = _folder_index(ctx, default_branch, adr_dir, blobs)
        rows.append(f"| {adr_dir or '/'} | {len(folder)} |")
    summary = f"adr-review: indexed {len(paths)} ADR(s) in {len(dirs)} folder(s) of {repo}@{default_branch}."
    _finish(ctx.reporter, summary)
    if rows:
        ctx.reporter.summary += ["", "| Folder | ADRs |", "|:--|--:|", *rows]


def _md_text(text: str) -> str:
    from app.core.render import sanitize_inline

    return sanitize_inline(text, 2000, in_table=False)
