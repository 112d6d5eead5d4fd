"""`GET /report` and `GET /report.png` on the App's server: the feedback report (app/adr_review/pipeline/reporting/report.py)
for the operator and whoever they give the token to.

Off unless the operator sets a token (ADR_REVIEW_REPORT_TOKEN, read by `adr-review serve`): the report
names repositories, ADR paths, reviewers' logins and their reasons, so it is never public. Without a
token both paths answer 404 and the server logs why at start; with one, a request needs
`Authorization: Bearer <token>` (compared in constant time) or gets 401.

Query: `repo=owner/name` (default: every repository), `days=N` (default 30), `format=markdown|json`,
`lang=en|ja`, `min_findings=N` (default 10).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adr_review.core.report import MIN_SHOWN, report_dict
from adr_review.pipeline.reporting.report import DEFAULT_DAYS, Window, report_for
from adr_review.pipeline.state_ports import FeedbackLog

log = logging.getLogger("adr_review.server")

_REPO = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
MAX_DAYS = 3660


def report_routes(
    store: FeedbackLog | None, token: str | None, *, clock: Callable[[], float] = time.time
) -> list[Route]:
    if not token or store is None:
        log.info(
            "report_disabled",
            extra={"why": "no ADR_REVIEW_REPORT_TOKEN" if not token else "no state store given"},
        )
    expected = (token or "").encode()

    def authorised(request: Request) -> Response | None:
        if not token or store is None:
            return JSONResponse(
                {"error": "the report is off: the operator has not set ADR_REVIEW_REPORT_TOKEN"},
                status_code=404,
            )
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected):
            log.warning("report_rejected", extra={"client": request.client.host if request.client else None})
            return JSONResponse(
                {"error": "a valid bearer token is required"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="adr-review report"'},
            )
        return None

    async def build(request: Request) -> Any:
        q = request.query_params
        repo = q.get("repo") or None
        if repo is not None and not _REPO.fullmatch(repo):
            raise _BadQuery("repo must be owner/name")
        try:
            days = float(q.get("days", DEFAULT_DAYS))
            min_findings = int(q.get("min_findings", MIN_SHOWN))
        except ValueError:
            raise _BadQuery("days and min_findings must be numbers") from None
        if not 0 < days <= MAX_DAYS or min_findings < 0:
            raise _BadQuery(f"days must be in (0, {MAX_DAYS}] and min_findings >= 0")
        window = Window.last_days(days, clock())
        assert store is not None
        return await anyio.to_thread.run_sync(lambda: report_for(store, repo, window, min_shown=min_findings))

    async def report(request: Request) -> Response:
        denied = authorised(request)
        if denied is not None:
            return denied
        fmt = request.query_params.get("format", "markdown")
        lang = request.query_params.get("lang", "en")
        if fmt not in ("markdown", "json") or lang not in ("en", "ja"):
            return JSONResponse({"error": "format is markdown or json, lang en or ja"}, status_code=400)
        try:
            result = await build(request)
        except _BadQuery as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        if fmt == "json":
            body = json.dumps(report_dict(result), ensure_ascii=False)
            return Response(body, media_type="application/json", headers=_NO_STORE)
        from adr_review.core.render import render_report

        return Response(
            render_report(result, language=lang), media_type="text/markdown; charset=utf-8", headers=_NO_STORE
        )

    async def report_png(request: Request) -> Response:
        denied = authorised(request)
        if denied is not None:
            return denied
        from adr_review.adapters.report_chart import ChartUnavailable
        from adr_review.adapters.report_chart import report_png as draw

        try:
            result = await build(request)
        except _BadQuery as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        try:
            data = await anyio.to_thread.run_sync(draw, result)
        except ChartUnavailable as exc:
            return JSONResponse({"error": str(exc)}, status_code=501)
        return Response(data, media_type="image/png", headers=_NO_STORE)

    return [
        Route("/report", report, methods=["GET"]),
        Route("/report.png", report_png, methods=["GET"]),
    ]


_NO_STORE = {"Cache-Control": "no-store"}


class _BadQuery(ValueError):
    pass
