"""The GitHub App's HTTP side: `POST /webhook`, `GET /healthz` and, with a token, `GET /report`
(app/adr_review/entrypoints/report_http.py) (Starlette, served by uvicorn).

The webhook does only what must happen before GitHub gets its answer: read the raw body (size-capped:
a body is buffered before its signature can be checked, so the cap and the server's concurrency limit,
`adr-review serve`, bound what unauthenticated requests can make us hold), verify
`X-Hub-Signature-256`, screen the event, and store the delivery with the runs it implies in one
transaction; the review itself runs on the worker threads (app/adr_review/pipeline/server/worker.py). Answers:
401 bad or missing signature (nothing stored) · 400 missing delivery headers or a body that is not JSON
· 413 body over the cap · 204 an event or action we do not handle · 202 stored (or a duplicate of a stored
delivery: `"duplicate": true`, nothing new queued) · 503 the store stayed unavailable through the retries
(STORE_RETRY_WAITS_S: a database blip is ridden out inside GitHub's 10 s; after that the delivery is
logged by id, `webhook_store_failed`, and catch-up asks GitHub for it again).
Imported only by `adr-review serve`: Starlette stays out of every other command.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adr_review.core.webhook_signature import verify
from adr_review.entrypoints.report_http import report_routes
from adr_review.pipeline.queue import Accepted, Delivery, RunSpec
from adr_review.pipeline.server.intake import delivery_record, intake
from adr_review.pipeline.state_ports import FeedbackLog, RunQueue

log = logging.getLogger("adr_review.server")

GITHUB_MAX_BODY = 25 * 1024 * 1024  # what GitHub may send at most
# What the events we handle need: a pull_request or issue_comment payload is tens of KiB; the largest
# parts, a PR body and a comment body, are 65,536 characters each (256 KiB in UTF-8 at worst).
DEFAULT_MAX_BODY = 1024 * 1024
# Waits between attempts to store a delivery (the write is one idempotent transaction, so a retry
# cannot store it twice), and the time all attempts may take: the answer stays inside the 10 s GitHub
# waits for it, even when an attempt hangs waiting for a connection.
STORE_RETRY_WAITS_S = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
STORE_BUDGET_S = 7.0


class _TooLarge(Exception):
    pass


@dataclass
class WebhookConfig:
    secret: str | None  # None only with --insecure-no-secret (local development)
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_attempts: int = 3


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(
    config: WebhookConfig,
    queue: RunQueue,
    *,
    on_enqueued: Callable[[], None] | None = None,
    health_extra: Callable[[], dict[str, Any]] | None = None,
    feedback: FeedbackLog | None = None,
    report_token: str | None = None,
) -> Starlette:
    """The ASGI app. on_enqueued wakes the workers; health_extra adds worker facts to /healthz;
    feedback and report_token turn on GET /report (both needed)."""
    if config.secret is None:
        log.warning("webhook_signature_disabled: --insecure-no-secret, every request is accepted unsigned")

    async def webhook(request: Request) -> Response:
        started = time.perf_counter()
        try:
            body = await _read_body(request, config.max_body_bytes)
        except _TooLarge:
            log.warning(
                "webhook_too_large",
                extra={
                    "delivery": request.headers.get("x-github-delivery"),
                    "limit": config.max_body_bytes,
                    "declared": request.headers.get("content-length"),
                },
            )
            return JSONResponse({"error": "payload too large"}, status_code=413)
        if config.secret is not None and not verify(
            config.secret, body, request.headers.get("x-hub-signature-256")
        ):
            log.warning(
                "webhook_rejected_signature",
                extra={
                    "delivery": request.headers.get("x-github-delivery"),
                    "sha1_only": _sha1_only(request),
                },
            )
            return JSONResponse({"error": "missing or invalid X-Hub-Signature-256"}, status_code=401)
        event = request.headers.get("x-github-event")
        delivery_id = request.headers.get("x-github-delivery")
        if not event or not delivery_id:
            return JSONResponse(
                {"error": "X-GitHub-Event and X-GitHub-Delivery are required"}, status_code=400
            )
        hook_id = request.headers.get("x-github-hook-id") or "0"
        try:
            payload = json.loads(body)
        except ValueError:
            return JSONResponse({"error": "body is not JSON"}, status_code=400)
        if not isinstance(payload, dict):
            return JSONResponse({"error": "body is not a JSON object"}, status_code=400)
        result = intake(event, payload, max_attempts=config.max_attempts, delivery_id=delivery_id)
        if result.ignored is not None:
            log.info(
                "webhook_ignored", extra={"delivery": delivery_id, "event": event, "why": result.ignored}
            )
            return Response(status_code=204)
        record = delivery_record(hook_id, delivery_id, event, body, result)
        try:
            accepted = await _store(queue, record, result.runs)
        except Exception as exc:
            log.error(
                "webhook_store_failed",
                extra={"delivery": delivery_id, "event": event, "error": f"{type(exc).__name__}: {exc}"},
            )
            return JSONResponse(
                {"error": "the store is unavailable; try again", "delivery": delivery_id}, status_code=503
            )
        if accepted.new_runs and on_enqueued is not None:
            on_enqueued()
        log.info(
            "webhook_accepted",
            extra={
                "delivery": delivery_id,
                "event": event,
                "duplicate": not accepted.stored,
                "runs": list(accepted.run_keys),
                "ms": round((time.perf_counter() - started) * 1000, 2),
            },
        )
        return JSONResponse(
            {"delivery": delivery_id, "duplicate": not accepted.stored, "runs": list(accepted.run_keys)},
            status_code=202,
        )

    async def healthz(request: Request) -> Response:
        """Reads only (the store's health is one query): an unauthenticated probe writes nothing."""
        facts: dict[str, Any] = await anyio.to_thread.run_sync(queue.health)
        if health_extra is not None:
            facts.update(health_extra())
        ok = bool(facts.get("store_ok")) and facts.get("workers_alive", 1) != 0
        facts["ok"] = ok
        return JSONResponse(facts, status_code=200 if ok else 503)

    return Starlette(
        routes=[
            Route("/webhook", webhook, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            *report_routes(feedback, report_token),
        ]
    )


async def _store(queue: RunQueue, record: Delivery, runs: Sequence[RunSpec]) -> Accepted:
    """accept_delivery, retried with a short back-off: a store that drops its connections for a moment
    (a database restart or failover) costs the answer a few seconds, not the delivery."""
    deadline = anyio.current_time() + STORE_BUDGET_S
    for attempt, wait in enumerate((*STORE_RETRY_WAITS_S, None), start=1):
        try:
            # an attempt past the budget is left behind: if it commits later, the delivery is stored
            # (catch-up then finds it and asks for nothing) and a redelivery is a duplicate
            with anyio.fail_after(max(0.05, deadline - anyio.current_time())):
                return await anyio.to_thread.run_sync(
                    queue.accept_delivery, record, runs, abandon_on_cancel=True
                )
        except Exception as exc:
            if wait is None or anyio.current_time() + wait >= deadline:
                raise
            log.warning(
                "webhook_store_retry",
                extra={
                    "delivery": record.delivery_id,
                    "attempt": attempt,
                    "error": f"{type(exc).__name__}: {exc}",
                },
            )
            await anyio.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


def _sha1_only(request: Request) -> bool:
    return "x-hub-signature" in request.headers and "x-hub-signature-256" not in request.headers
