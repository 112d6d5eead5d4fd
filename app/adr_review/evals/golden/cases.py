"""Golden case and recording files, the request key, and the ADR library the cases read.

Layout, next to each prompt: `prompts/<name>/golden/<case>.case.yaml` (an input and the expectations)
and `prompts/<name>/golden/<case>.recording.json` (the model's raw answer to that input). A recording is
keyed by a hash of the exact request production would send for the case (rendered system + cacheable +
user parts, output schema, model, temperature, max_tokens) and of the gate it is held to (every setting
of meta.yaml, the caps the code applies to the answer among them, and the thresholds in force), so any
change to the prompt, its schema, its parameters, the constitution, the way inputs are rendered, a cap
or a threshold makes the recording stale instead of silently scoring an answer to a different question
or against a gate nobody looked at.

A recording is *verified* when it answers the key it carries: `answered_key`, which the tool writes
when a model answers (`--live --record`) or when a new hand-written answer is keyed for the first time,
and never when it only moves an answer to a new key (`--rekey-hand-written`). Deleting a note does not
verify anything: a recording without `answered_key` is unverified.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from adr_review.core.adr import Adr, parse_adr
from adr_review.core.results import Usage
from adr_review.pipeline.ports import LlmRequest, LlmResponse
from adr_review.pipeline.structured import request_key as structured_request_key
from adr_review.prompts import Prompt

CASE_SUFFIX = ".case.yaml"
RECORDING_SUFFIX = ".recording.json"

# Where a recording's answer came from. Only SOURCE_LIVE is a real model's output: an answer from the
# provider's own API host (`answer_source`).
SOURCE_HAND_WRITTEN = "hand-written (no API key available)"
SOURCE_FAKE_SERVER = "fake-server"  # a loopback address: the tests' fake Messages API, or whatever runs there
SOURCE_PROXY = "proxy"  # any other host: a gateway or proxy; nothing shows a model answered
SOURCE_LIVE = "live"
SOURCES = (SOURCE_HAND_WRITTEN, SOURCE_FAKE_SERVER, SOURCE_PROXY, SOURCE_LIVE)
UNKEYED = "unkeyed"  # the key of a hand-written answer nobody has keyed yet (docs/golden-eval.md)

# The providers' own API hosts, the ones the adapter's SDK clients talk to by default
# (app/adr_review/adapters/llm/providers.py): the Claude API, Amazon Bedrock's runtime, Vertex AI.
_PROVIDER_HOSTS = re.compile(
    r"api\.anthropic\.com"
    r"|bedrock-runtime(?:-fips)?\.[a-z]{2}(?:-gov)?-[a-z]+-\d\.amazonaws\.com"
    r"|(?:[a-z]+-[a-z]+\d+-)?aiplatform\.googleapis\.com"
)


def answer_source(base_url: str) -> str:
    """The label of an answer from `base_url` (the URL the SDK client sent the request to): `live` only
    for https to a provider's own API host on its standard port; `fake-server` for a loopback address
    (127.0.0.0/8, ::1, localhost); `proxy` for anything else, whatever it forwards to."""
    url = urlparse(base_url)
    host = (url.hostname or "").rstrip(".").casefold()
    try:
        port = url.port
    except ValueError:
        return SOURCE_PROXY
    if host == "localhost" or _is_loopback(host):
        return SOURCE_FAKE_SERVER
    if url.scheme == "https" and port in (None, 443) and _PROVIDER_HOSTS.fullmatch(host):
        return SOURCE_LIVE
    return SOURCE_PROXY


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


LIBRARY_DIR = "_golden"  # prompts/_golden/adrs/...: unmodified copies of the real ADRs the cases use


class GoldenError(ValueError):
    """A case or recording file that cannot be read: reported per file, never a crash of the run."""


class GoldenCase(BaseModel):
    """One golden case. `input` and `expect` are validated by the prompt's suite (RecallSuite, BlindSpotSuite)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    description: str
    sources: list[str] = Field(min_length=1)  # where the input comes from, with licence: cite, always
    input: dict[str, Any]
    expect: dict[str, Any] = Field(default_factory=dict)
    # Where an exported case came from (a dismissed finding: app/adr_review/evals/golden/dismissed.py); not scored.
    origin: dict[str, Any] | None = None
    path: Path | None = Field(default=None, exclude=True)


class RecordedUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    estimated: bool = False  # True for hand-written answers: characters / 4, never billed

    def to_usage(self, model: str) -> Usage:
        return Usage(
            model=model,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            cost_usd=self.cost_usd,
            calls=1,
        )


class RecordedRequest(BaseModel):
    """The parameters the key covers, in the clear, so a reviewer sees what changed."""

    model_config = ConfigDict(extra="forbid")
    model: str
    temperature: float | None
    max_tokens: int
    prompt_files_hash: str


class RekeyNote(BaseModel):
    """Left by `--rekey-hand-written`: the answer was written for another request and only its key was
    moved. Replay reports such a case as unverified and the prompt fails until a model answers the new
    request (`--live --record`) or a person rewrites the answer for it and deletes this note."""

    model_config = ConfigDict(extra="forbid")
    from_key: str  # the key the answer was written (or last confirmed) for
    from_prompt_files_hash: str | None = None
    date: str


class Recording(BaseModel):
    model_config = ConfigDict(extra="forbid")
    case: str
    prompt: str
    key: str  # request_key() of the request this answers
    source: str  # SOURCE_HAND_WRITTEN | SOURCE_FAKE_SERVER | SOURCE_LIVE
    model: str  # the model that answered (for hand-written: the model the answer stands in for)
    date: str  # ISO date the answer was recorded (or last re-keyed, for hand-written answers)
    usage: RecordedUsage
    request: RecordedRequest
    base_url: str | None = None  # the Messages API the answer came from (live / fake-server)
    note: str | None = None
    text: str = ""  # the raw answer text
    data: Any = None  # the structured answer (tool input), when the API returned one
    rekeyed: RekeyNote | None = None  # set by --rekey-hand-written: where the answer was moved from
    # The gate the key covers besides the request (`gate_of`), in the clear for the diff.
    gate: dict[str, Any] | None = None
    # The key of the request this answer was given for: written by the tool when a model answers or a
    # new hand-written answer is first keyed, never by a re-key. Not `key`: unverified.
    answered_key: str | None = None

    @field_validator("source")
    @classmethod
    def _known_source(cls, value: str) -> str:
        """Every answer says where it came from; nothing unlabelled can pass for model output."""
        if value not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}")
        return value

    @model_validator(mode="after")
    def _source_matches_its_endpoint(self) -> Recording:
        """An answer from an endpoint says which one, and its label is the one that endpoint earns: a
        proxy's answer relabelled `live` does not load."""
        if self.source == SOURCE_HAND_WRITTEN:
            if self.base_url is not None:
                raise ValueError("a hand-written answer has no base_url")
        elif self.base_url is None or answer_source(self.base_url) != self.source:
            raise ValueError(f"source {self.source!r} is not what base_url {self.base_url!r} earns")
        return self

    @property
    def verified(self) -> bool:
        """It answers the key it carries (see the module doc)."""
        return self.answered_key is not None and self.answered_key == self.key

    def response(self) -> LlmResponse:
        return LlmResponse(text=self.text, usage=self.usage.to_usage(self.model), data=self.data)


def request_key(request: LlmRequest) -> str:
    """sha256 over everything the model sees or is constrained by (the same hash that content-addresses
    a stage's answer in the state store); metadata (run ids) excluded. Before the gate was keyed, this
    alone was a recording's key (`legacy_answer`)."""
    return "sha256:" + structured_request_key(request)


def gate_of(prompt: Prompt, thresholds: Mapping[str, float]) -> dict[str, Any]:
    """What a recording's answer is held to besides the request: every setting of meta.yaml as parsed
    (the caps the code applies to an answer, such as max_counter_arguments, and its `eval` block;
    comments and layout aside) and the thresholds in force, defaults included."""
    meta = json.loads(json.dumps(prompt.meta.raw, sort_keys=True, default=str))
    return {"meta": meta, "thresholds": {k: float(thresholds[k]) for k in sorted(thresholds)}}


def recording_key(request: LlmRequest, gate: Mapping[str, Any]) -> str:
    """The key of a recording: the request and the gate (`gate_of`)."""
    body = json.dumps({"request": request_key(request), "gate": gate}, sort_keys=True, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def legacy_answer(recording: Recording, request: LlmRequest) -> bool:
    """A recording keyed before the gate was: its key is the bare request hash of exactly this request,
    and it carries neither a re-key note nor an answered key. It answers this request; keying it with
    the gate is not a re-key (app/adr_review/evals/golden/rekey.py)."""
    return (
        recording.answered_key is None and recording.rekeyed is None and recording.key == request_key(request)
    )


def golden_dir(prompt: Prompt) -> Path:
    return prompt.folder / "golden"


def load_cases(folder: Path) -> tuple[list[GoldenCase], list[str]]:
    """Every `*.case.yaml` in folder, sorted by id, and a message per unreadable file."""
    cases: list[GoldenCase] = []
    errors: list[str] = []
    for path in sorted(folder.glob(f"*{CASE_SUFFIX}")):
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
            case = GoldenCase.model_validate(raw)
        except (OSError, yaml.YAMLError, ValidationError) as exc:
            errors.append(f"{path.name}: {exc}")
            continue
        expected_id = path.name[: -len(CASE_SUFFIX)]
        if case.id != expected_id:
            errors.append(f"{path.name}: id {case.id!r} does not match the file name")
            continue
        cases.append(case.model_copy(update={"path": path}))
    return cases, errors


def recording_path(folder: Path, case_id: str) -> Path:
    return folder / f"{case_id}{RECORDING_SUFFIX}"


def load_recording(folder: Path, case_id: str) -> Recording | None:
    path = recording_path(folder, case_id)
    if not path.exists():
        return None
    try:
        return Recording.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise GoldenError(f"{path.name}: {exc}") from exc


def save_recording(folder: Path, recording: Recording) -> Path:
    path = recording_path(folder, recording.case)
    body = recording.model_dump(mode="json")
    path.write_text(json.dumps(body, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def estimate_tokens(chars: int) -> int:
    """Rough token count for hand-written answers (about 4 characters a token), labelled estimated."""
    return max(1, (chars + 3) // 4)


def request_chars(request: LlmRequest) -> int:
    return len(request.system) + len(request.cacheable_prefix or "") + len(request.user)


# --- the ADR library shared by the cases of every prompt ------------------------------------------------


def library_path(prompt: Prompt, relative: str) -> Path:
    """A library file named by a case; refuses paths that leave the library."""
    root = (prompt.folder.parent / LIBRARY_DIR / "adrs").resolve()
    path = (root / relative).resolve()
    if root not in path.parents:
        raise GoldenError(f"{relative!r} is outside {root}")
    return path


def load_library_adr(prompt: Prompt, relative: str, name: str | None = None) -> Adr:
    """Parse a library ADR with the production parser, as the file `name` (default: its own name)."""
    data = library_path(prompt, relative).read_bytes()
    return _parse_cached(name or relative.rsplit("/", 1)[-1], data)


@functools.lru_cache(maxsize=512)
def _parse_cached(name: str, data: bytes) -> Adr:
    """Each case renders twice (capture, then answer) and cases share candidates: parse each file once."""
    return parse_adr(name, data)
