"""The Protocols the pipeline depends on. Adapters implement them; tests fake them here, at the ports."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.core.adr import Adr
from app.core.results import RetrievalResult, Usage


@dataclass(frozen=True)
class LlmRequest:
    prompt_name: str
    system: str
    user: str  # the rendered user content
    output_schema: Mapping[str, Any]  # JSON schema the answer must satisfy
    model: str
    temperature: float | None  # configured value, always recorded; sent only if the model accepts it
    max_tokens: int
    cacheable_prefix: str | None = None  # a long, stable block (candidates) sent with cache_control before `user`
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LlmResponse:
    text: str  # the raw answer text (JSON expected; parse with app.core.llm_json)
    usage: Usage
    data: Any = None  # already-parsed object when the adapter used structured output


class LlmError(Exception):
    """A call that produced no usable answer. kind: timeout | http_error | connection | refused | empty."""

    def __init__(self, kind: str, message: str, usage: Usage | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.usage = usage or Usage()


class LlmPort(Protocol):
    def complete(self, request: LlmRequest) -> LlmResponse: ...


@dataclass(frozen=True)
class SyncReport:
    added: int
    updated: int
    removed: int
    unchanged: int
    errors: tuple[str, ...]  # per-file parse errors, "path: reason"
    seconds: float
    embedding: str
    rebuilt: bool = False


class AdrIndex(Protocol):
    def sync(self, adrs: Sequence[Adr]) -> SyncReport: ...

    def search(
        self,
        query: str,
        *,
        top_n: int = 20,
        exclude_paths: frozenset[str] = frozenset(),
        pool: frozenset[str] | None = None,
    ) -> RetrievalResult: ...


class StageMemo(Protocol):
    """Checkpointing seen from a stage: return the stored JSON result of `stage`, or compute, store, return it.

    `compute` returns a JSON-serialisable dict; if it raises, the attempt is recorded as failed and the
    exception propagates (nothing is stored, so a re-run computes it again). Must be thread-safe:
    the blind-spot critics call it concurrently. Stage names: "recall", "critic:devils_advocate",
    "critic:premortem", "critic:adjacent_domain", "judge", "render", "comment".
    """

    def __call__(self, stage: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]: ...


def no_memo(stage: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The StageMemo that stores nothing: for local one-off runs and unit tests."""
    return compute()
