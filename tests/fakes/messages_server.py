"""A fake Anthropic Messages API on 127.0.0.1, for driving the real `anthropic` client via `base_url`.

The SDK's HTTP layer cannot be intercepted by respx, so tests talk HTTP to this server instead. It speaks
just enough of POST /v1/messages: JSON in, a `message` (text or tool_use content + usage) or an
`{"type": "error", ...}` body out, with any status, headers and delay a test scripts. The same Messages
body is also served where the SDK's cloud clients send it: Amazon Bedrock's POST /model/{id}/invoke
(`AnthropicBedrock`) and Vertex AI's POST /projects/{p}/locations/{r}/publishers/anthropic/models/{id}:rawPredict
(`AnthropicVertex`); there the model comes from the path, and `Call.path` / `Call.headers` (the SigV4 or
Bearer `authorization`) tell a test which route and which auth it got. Nothing checks a signature.

Which step a request belongs to ("prompt") is read from the `x-adr-review-prompt` header that
app/adr_review/adapters/llm/adapter.py sends, else from a forced tool's name. Per prompt (or "*" for any) a test queues
scripted replies; when the queue is empty the prompt's default responder answers; the last resort is a
schema-valid minimal instance of the request's output schema (`output_config.format.schema`, or a
forced tool's input_schema). A structured `answer` goes back as a JSON text block (structured outputs)
or as a tool_use block when the request forced a tool. Every call is logged (thread-safe).

In-process (pytest):                         Out of process (webhook kill tests, eval recordings):
    server = FakeMessagesServer().start()        python -m tests.fakes.messages_server --port 0 \
    server.script("recall-pre-gate",                 --responses replies.json
                  Reply(status=529),             -> prints "PORT <n>" then serves until killed.
                  Reply(answer={...}))          GET /_calls -> {"count", "by_prompt", "calls"}
    server.count("recall-pre-gate")              POST /_script {"prompt", "replies": [...]}; POST /_reset
                                                 POST /_slow {"prompt", "seconds"}
    server.stop()

Responses file (JSON): {"scripts": {"<prompt>|*": [reply, ...]}, "defaults": {"<prompt>": reply}} where a
reply is {"status", "answer" | "text" | "body", "delay", "headers", "usage"} (all optional).
Token usage is synthetic but deterministic: ~4 characters a token; a block sent with cache_control is a
cache write the first time this server sees its text and a cache read afterwards.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from tests.fakes.http_server import JsonHandler, LocalServer, serve_until_interrupted

PROMPT_HEADER = "x-adr-review-prompt"
SAMPLING_PARAMS = ("temperature", "top_p", "top_k")
NO_SAMPLING_VERSION = "2026-10-21"  # the API version that removed them (a 400 on any model)
ANY = "*"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Exactly one of answer / text / body (or fn) says what to send.

    answer: a JSON value, sent as the model's structured output; text: a raw text block (e.g. not JSON);
    body: the whole HTTP body, verbatim.

    status != 200 without a body sends the API's error envelope for that status. fn computes the
    reply from the request JSON (e.g. to cite a candidate it was actually given).
    """

    status: int = 200
    answer: Any = None
    tool_input: Any = None  # older name of `answer`, still accepted
    text: str | None = None
    body: Any = None  # sent as JSON verbatim (or as bytes when it is a str and raw=True)
    raw: bool = False
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)
    usage: Mapping[str, int] | None = None  # overrides the synthetic usage
    fn: Callable[[dict[str, Any]], Reply] | None = None

    @classmethod
    def from_json(cls, spec: Mapping[str, Any]) -> Reply:
        return cls(
            status=int(spec.get("status", 200)),
            answer=spec.get("answer", spec.get("tool_input")),
            text=spec.get("text"),
            body=spec.get("body"),
            raw=bool(spec.get("raw", False)),
            delay=float(spec.get("delay", 0.0)),
            headers=dict(spec.get("headers") or {}),
            usage=spec.get("usage"),
        )


@dataclass(frozen=True)
class Call:
    n: int
    prompt: str
    model: str
    status: int
    request: dict[str, Any]
    headers: dict[str, str]
    at: float
    path: str = "/v1/messages"

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "prompt": self.prompt,
            "model": self.model,
            "status": self.status,
            "request": self.request,
            "headers": self.headers,
            "at": self.at,
            "path": self.path,
        }


Responder = Callable[[dict[str, Any]], Reply]


class FakeMessagesServer(LocalServer):
    thread_name = "fake-anthropic"
    poll_interval = 0.05

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self._lock = threading.Lock()
        self._scripts: dict[str, deque[Reply]] = {}
        self._defaults: dict[str, Responder] = {"recall-pre-gate": recall_responder}
        self._calls: list[Call] = []
        self._slow: dict[str, float] = {}  # prompt -> seconds every call of it takes at least
        self._seen_cache_blocks: set[str] = set()
        self._ids = count(1)
        self._stopping = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------------
    def handler(self) -> type[BaseHTTPRequestHandler]:
        return _make_handler(self)

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a scripted delay
        super().stop()

    # -- scripting ---------------------------------------------------------------------------------
    def script(self, prompt: str, *replies: Reply) -> FakeMessagesServer:
        """Queue replies for the next calls of `prompt` ("*" = any prompt without its own queue)."""
        with self._lock:
            self._scripts.setdefault(prompt, deque()).extend(replies)
        return self

    def set_default(self, prompt: str, responder: Responder | Reply) -> FakeMessagesServer:
        """What `prompt` answers once its script is used up (a Reply is repeated for every call)."""
        fn = _constant(responder) if isinstance(responder, Reply) else responder
        with self._lock:
            self._defaults[prompt] = fn
        return self

    def slow(self, prompt: str, seconds: float) -> FakeMessagesServer:
        """Every call of `prompt` takes at least `seconds` (a model stage in flight, for as long as
        a test needs one), whatever answers it; until reset."""
        with self._lock:
            self._slow[prompt] = seconds
        return self

    def reset(self) -> None:
        with self._lock:
            self._scripts.clear()
            self._slow.clear()
            self._calls.clear()
            self._seen_cache_blocks.clear()

    def load_responses(self, spec: Mapping[str, Any]) -> None:
        for prompt, replies in (spec.get("scripts") or {}).items():
            self.script(prompt, *(Reply.from_json(r) for r in replies))
        for prompt, reply in (spec.get("defaults") or {}).items():
            self.set_default(prompt, Reply.from_json(reply))

    # -- the call log ------------------------------------------------------------------------------
    def calls(self, prompt: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if prompt is None or c.prompt == prompt]

    def count(self, prompt: str | None = None) -> int:
        return len(self.calls(prompt))

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(Counter(c.prompt for c in self._calls))

    # -- serving -----------------------------------------------------------------------------------
    def _next_reply(self, prompt: str, request: dict[str, Any]) -> Reply:
        with self._lock:
            queue = self._scripts.get(prompt) or self._scripts.get(ANY)
            reply = queue.popleft() if queue else None
            default = self._defaults.get(prompt)
        if reply is None:
            reply = default(request) if default else schema_responder(request)
        while reply.fn is not None:
            reply = reply.fn(request)
        with self._lock:
            slow = self._slow.get(prompt, 0.0)
        return replace(reply, delay=slow) if slow > reply.delay else reply

    def _record(
        self, prompt: str, request: dict[str, Any], headers: dict[str, str], status: int, path: str
    ) -> None:
        with self._lock:
            self._calls.append(
                Call(
                    n=next(self._ids),
                    prompt=prompt,
                    model=str(request.get("model", "")),
                    status=status,
                    request=request,
                    headers=headers,
                    at=time.time(),
                    path=path,
                )
            )

    def _synthetic_usage(self, request: dict[str, Any], output: str) -> dict[str, int]:
        cached_texts = [b["text"] for b in _content_blocks(request) if b.get("cache_control") and "text" in b]
        cache_write = cache_read = 0
        with self._lock:
            for text in cached_texts:
                if text in self._seen_cache_blocks:
                    cache_read += _tokens(text)
                else:
                    self._seen_cache_blocks.add(text)
                    cache_write += _tokens(text)
        total = _tokens(json.dumps(request, ensure_ascii=False))
        return {
            "input_tokens": max(1, total - cache_read - cache_write),
            "output_tokens": max(1, _tokens(output)),
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
        }

    def _message(self, request: dict[str, Any], reply: Reply) -> dict[str, Any]:
        model = str(request.get("model", "claude-fake"))
        if reply.answer is None and reply.tool_input is not None:
            reply = replace(reply, answer=reply.tool_input)
        tool = _forced_tool(request)
        if reply.answer is not None and tool:
            content: list[dict[str, Any]] = [
                {
                    "type": "tool_use",
                    "id": f"toolu_fake{next(self._ids)}",
                    "name": tool,
                    "input": reply.answer,
                }
            ]
            stop, output = "tool_use", json.dumps(reply.answer, ensure_ascii=False)
        elif reply.answer is not None:
            output = json.dumps(reply.answer, ensure_ascii=False)
            content = [{"type": "text", "text": output}]
            stop = "end_turn"
        else:
            output = reply.text or ""
            content = [{"type": "text", "text": output}]
            stop = "end_turn"
        usage = dict(reply.usage) if reply.usage is not None else self._synthetic_usage(request, output)
        return {
            "id": f"msg_fake{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }


def _make_handler(server: FakeMessagesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(JsonHandler):
        def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False).encode()
            base = {
                "content-type": "application/json",
                "content-length": str(len(data)),
                "request-id": f"req_fake{next(server._ids)}",
            }
            self.write_response(status, data, base, headers or {})

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") == "/_calls":
                calls = server.calls()
                self._send(
                    200,
                    {
                        "count": len(calls),
                        "by_prompt": server.counts(),
                        "calls": [c.to_json() for c in calls],
                    },
                )
            else:
                self._send(404, _error(404, f"no route GET {self.path}"))

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0].rstrip("/")
            try:
                body = self.read_json()
            except ValueError:
                self._send(400, _error(400, "request body is not JSON"))
                return
            if path == "/_script":
                server.script(
                    str(body.get("prompt", ANY)), *(Reply.from_json(r) for r in body.get("replies", []))
                )
                self._send(200, {"ok": True})
            elif path == "/_slow":
                server.slow(str(body["prompt"]), float(body["seconds"]))
                self._send(200, {"ok": True})
            elif path == "/_reset":
                server.reset()
                self._send(200, {"ok": True})
            elif path == "/v1/messages":
                self._messages(body, path)
            elif m := _CLOUD_ROUTE.match(path):
                # the cloud clients move the model into the path; the body is the Messages body
                self._messages({"model": unquote(m["model"] or m["vmodel"]), **body}, path)
            else:
                self._send(404, _error(404, f"no route POST {self.path}"))

        def _messages(self, request: dict[str, Any], path: str) -> None:
            headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "x-api-key"}
            prompt = headers.get(PROMPT_HEADER) or _forced_tool(request) or ""
            removed = [k for k in SAMPLING_PARAMS if k in request]
            version = headers.get("anthropic-version") or str(request.get("anthropic_version", ""))
            if removed and version >= NO_SAMPLING_VERSION:  # as the real API answers from that version on
                server._record(prompt, request, headers, 400, path)
                self._send(400, _error(400, f"{removed[0]}: Extra inputs are not permitted"))
                return
            try:
                reply = server._next_reply(prompt, request)
            except Exception as exc:  # a broken test responder: make it visible as a 500
                server._record(prompt, request, headers, 500, path)
                self._send(500, _error(500, f"fake responder failed: {exc!r}"))
                return
            server._record(prompt, request, headers, reply.status, path)
            if reply.delay and server._stopping.wait(reply.delay):
                return
            if reply.body is not None:
                payload: Any = (
                    reply.body.encode() if reply.raw and isinstance(reply.body, str) else reply.body
                )
            elif reply.status != 200:
                payload = _error(reply.status, f"scripted {reply.status}")
            else:
                payload = server._message(request, reply)
            self._send(reply.status, payload, reply.headers)

    return Handler


def _constant(reply: Reply) -> Responder:
    def respond(_request: dict[str, Any]) -> Reply:
        return reply

    return respond


# -- request helpers -------------------------------------------------------------------------------
_CLOUD_ROUTE = re.compile(
    r"^/model/(?P<model>[^/]+)/invoke$"  # Amazon Bedrock (InvokeModel)
    r"|^/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/(?P<vmodel>[^/:]+):rawPredict$"  # Vertex
)


def _error(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _forced_tool(request: Mapping[str, Any]) -> str | None:
    choice = request.get("tool_choice") or {}
    if choice.get("type") == "tool":
        return str(choice.get("name"))
    tools = request.get("tools") or []
    return str(tools[0]["name"]) if len(tools) == 1 else None


def output_schema(request: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON schema the request asks the answer to follow, if any."""
    fmt = (request.get("output_config") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        return dict(fmt.get("schema") or {})
    name = _forced_tool(request)
    for tool in request.get("tools") or []:
        if tool.get("name") == name:
            return dict(tool.get("input_schema") or {})
    return None


def _content_blocks(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    system = request.get("system")
    if isinstance(system, list):
        blocks.extend(system)
    elif isinstance(system, str):
        blocks.append({"type": "text", "text": system})
    for msg in request.get("messages") or []:
        content = msg.get("content")
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content})
        else:
            blocks.extend(content or [])
    return blocks


def request_text(request: Mapping[str, Any]) -> str:
    """Everything the model was shown (system + messages), for responders that answer from the input."""
    return "\n".join(str(b.get("text", "")) for b in _content_blocks(request))


def minimal_instance(schema: Mapping[str, Any]) -> Any:
    """The smallest value valid for simple JSON schemas (required properties, minItems, enum[0])."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: minimal_instance(props.get(k, {})) for k in schema.get("required", [])}
    if kind == "array":
        return [minimal_instance(schema.get("items") or {}) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "string":
        return "x" * max(1, int(schema.get("minLength", 1)))
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def schema_responder(request: dict[str, Any]) -> Reply:
    """Last-resort default: a schema-valid minimal answer, or a text '{}' when no schema was sent."""
    schema = output_schema(request)
    return Reply(answer=minimal_instance(schema)) if schema is not None else Reply(text="{}")


# Candidate lines as prompts/recall-pre-gate/prompt.md renders them.
_CANDIDATE = re.compile(r"^### (?P<id>\S+)[^\n]*\n(?:.*\n)*?summary: (?P<summary>[^\n]+)", re.MULTILINE)


def recall_candidates(request: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(adr_id, summary) of the candidates shown in a recall-pre-gate request, in order."""
    return [(m.group("id"), m.group("summary").strip()) for m in _CANDIDATE.finditer(request_text(request))]


def recall_responder(request: dict[str, Any]) -> Reply:
    """A plausible recall answer: cite up to the first 2 candidates, quoting the start of the first
    sentence of their summaries (a summary joins several blocks; a quote must stay inside one)."""
    citations: list[dict[str, str]] = []
    for adr_id, summary in recall_candidates(request)[:2]:
        quote = re.split(r"(?<=[.:;。])\s", summary, maxsplit=1)[0][:60].strip()
        citations.append(
            {"adr_id": adr_id, "relevance": "high" if not citations else "med", "relevance_reason": quote}
        )
    return Reply(answer={"citations": citations})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--responses", type=Path, help="JSON file of scripts/defaults (see module doc)")
    args = parser.parse_args(argv)
    server = FakeMessagesServer(args.host, args.port)
    if args.responses:
        server.load_responses(json.loads(args.responses.read_text(encoding="utf-8")))
    return serve_until_interrupted(server)


if __name__ == "__main__":
    sys.exit(main())
