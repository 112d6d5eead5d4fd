"""The Protocols the pipeline depends on. Adapters implement them; tests fake them here, at the ports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
