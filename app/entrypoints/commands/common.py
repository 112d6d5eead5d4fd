"""What every local command does the same way: logging to stderr, and reading --config."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.config import RepoConfig


def setup_logging(default_level: str = "WARNING") -> None:
    logging.basicConfig(
        level=os.environ.get("ADR_REVIEW_LOG_LEVEL", default_level).upper(),
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )


def repo_config(path: Path | None) -> RepoConfig:
    """The repo config from --config (the defaults without one). Raises ValueError with a one-line message."""
    from app.config import RepoConfig, RepoConfigError, parse_repo_config
    from app.entrypoints.errors import error_text

    if path is None:
        return RepoConfig()
    try:
        return parse_repo_config(path.read_bytes(), str(path))
    except OSError as exc:
        raise ValueError(f"--config: {error_text(exc)}") from exc
    except RepoConfigError as exc:
        raise ValueError(str(exc)) from exc
