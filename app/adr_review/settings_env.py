"""The settings read from the environment with pydantic-settings (`Settings`, `AppSettings`).

Imported on first use through `adr_review.config` (its `__getattr__`): pydantic-settings costs about
0.1 s of imports, which an offline recall does not pay (it reads `config.process_settings`).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from adr_review.process_env import ENV_PREFIX, ProcessSettings


class Settings(ProcessSettings, BaseSettings):
    """Process-level settings from the environment: the fields of `config.ProcessSettings`."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")


class AppSettings(BaseSettings):
    """The GitHub App server (`adr-review serve`): ADR_REVIEW_APP_* / ADR_REVIEW_* from the environment.

    See docs/app.md. The webhook secret is required unless the server runs with --insecure-no-secret.
    """

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")
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
    # PostgreSQL instead of the SQLite file (several hosts): postgresql://user:password@host:5432/db
    database_url: str | None = None
    db_pool_size: int = Field(default=8, ge=1)  # connections per process (PostgreSQL)
    # A Chroma server instead of the embedded index per process (several hosts): http://host:8000
    chroma_url: str | None = None
    chroma_token: str | None = None  # sent as `Authorization: Bearer` when the server wants one
    # Every request to the Chroma server: a connect and a read deadline, then `chroma_retries` more
    # tries; what still fails fails the run, which the queue retries (docs/app.md, "Faults")
    chroma_connect_timeout_s: float = Field(default=5.0, gt=0)
    chroma_read_timeout_s: float = Field(default=30.0, gt=0)
    chroma_retries: int = Field(default=1, ge=0, le=5)
    store_dir: Path = Path(".adr-review")
    lease_ttl_s: float = 300.0  # a dead worker's run is reclaimed after this; renewed every ttl/3
    # SIGTERM: how long a worker waits for the stages in flight; the lease TTL must be >= 1.5 x this
    shutdown_wait_s: float = Field(default=10.0, ge=0)
    # The worker role's liveness file (app/adr_review/entrypoints/liveness.py); default <store_dir>/worker.heartbeat.
    heartbeat_file: Path | None = None
    heartbeat_every_s: float = Field(default=10.0, gt=0)  # `adr-review health --worker` allows 60 s
    max_attempts: int = 3  # then the run is failed with its last error
    retry_backoff_s: float = 30.0
    stall_after_s: float = 3600.0  # watchdog: a running run without stage progress this long fails
    catch_up: bool = True  # list recent App deliveries and redeliver failed ones we lack: on start, then
    catch_up_every_s: float = Field(default=120.0, gt=0)  # ... every this often, in every web process
    catch_up_window_s: float = 3 * 86400.0  # GitHub keeps deliveries for 3 days
    # A body is buffered before its signature is checked: the cap and the concurrency limit bound what
    # unauthenticated requests can make the server hold (max_connections x max_body_bytes). Real
    # pull_request / issue_comment payloads are tens of KiB; GitHub's own cap is 25 MB.
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_connections: int = Field(default=64, ge=1)  # open connections + requests in flight; then 503
    # GET /report (app/adr_review/entrypoints/report_http.py) answers only a caller with this bearer token; unset: off.
    report_token: str | None = None
