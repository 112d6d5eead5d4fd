"""A refused API key is a failed run, not a quiet one: the review still degrades and its comment says
why (the pipeline's rule for any failed model call), but the command and the Action step must fail too,
or a wrong key looks like a review that had nothing to say. `AuthWatch` wraps the run's LlmPort and
keeps the first refusal (LlmError kind "auth": HTTP 401 / 403 from the provider); `refused_message`
says it, naming the setting that holds the credentials.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

from adr_review.pipeline.ports import LlmError, LlmPort, LlmRequest, LlmResponse

if TYPE_CHECKING:
    from adr_review.config import RepoConfig

Where = Literal["cli", "action"]

# Where the credentials come from, per provider and entrypoint: what the user has to fix.
_CREDENTIALS: Mapping[str, Mapping[Where, str]] = {
    "anthropic": {
        "cli": "the API key in ANTHROPIC_API_KEY",
        "action": "the API key in the `anthropic-api-key` input (the secret the workflow passes to it)",
    },
    "bedrock": {
        "cli": "the AWS credentials (AWS_* variables or profile) and the model's access in Bedrock",
        "action": "the workflow's AWS credentials (`llm-provider: bedrock`) and the model's access in Bedrock",
    },
    "vertex": {
        "cli": "the Google Cloud credentials (ADR_REVIEW_VERTEX_ACCESS_TOKEN or Application Default Credentials)",
        "action": "the workflow's Google Cloud credentials (`llm-provider: vertex`)",
    },
}


class AuthWatch:
    """The LlmPort of a run, remembering the first time the provider refused its credentials."""

    def __init__(self, llm: LlmPort) -> None:
        self.llm = llm
        self.refused: str | None = None  # the provider's answer, e.g. "HTTP 401: authentication_error: …"
        self._lock = threading.Lock()

    def complete(self, request: LlmRequest) -> LlmResponse:
        try:
            return self.llm.complete(request)
        except LlmError as exc:
            if exc.kind == "auth":
                with self._lock:
                    self.refused = self.refused or exc.message
            raise

    def __getattr__(self, name: str) -> object:  # the adapter's other attributes
        return getattr(self.llm, name)


class AuthWatches:
    """An LLM factory (per repo config) whose every model is watched: the Action builds one per plan."""

    def __init__(self, factory: Callable[[RepoConfig], LlmPort | None]) -> None:
        self._factory = factory
        self._made: list[tuple[AuthWatch, str]] = []

    def __call__(self, config: RepoConfig) -> LlmPort | None:
        llm = self._factory(config)
        if llm is None:
            return None
        watch = AuthWatch(llm)
        self._made.append((watch, config.llm.provider))
        return watch

    @property
    def refused(self) -> str | None:
        return next((w.refused for w, _ in self._made if w.refused), None)

    @property
    def provider(self) -> str:
        return next((p for w, p in self._made if w.refused), "anthropic")


def refused_message(refused: str, provider: str, where: Where) -> str:
    """One line for the log, the `::error` annotation and the command's stderr."""
    creds = _CREDENTIALS.get(provider, _CREDENTIALS["anthropic"])[where]
    return (
        f"the model provider refused the credentials ({refused}): check {creds}. The review ran without "
        "the model's steps and its comment says which."
    )
