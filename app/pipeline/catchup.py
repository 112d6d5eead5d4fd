"""Catch-up on start: GitHub does not redeliver a failed webhook by itself, so after a downtime the App
lists its recent deliveries (`GET /app/hook/deliveries`) and asks for a redelivery of every failed one
whose X-GitHub-Delivery (guid) it has not stored and that no later attempt delivered.

One redelivery request per guid, only for events the server handles, only inside the window GitHub
keeps deliveries for (3 days); the redelivery comes back through POST /webhook like any delivery, so
its signature is checked and it is deduplicated like any other.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from app.pipeline.intake import HANDLED_EVENTS
from app.pipeline.ports import DeliveryLog

log = logging.getLogger(__name__)


class DeliveryRow(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def guid(self) -> str: ...
    @property
    def delivered_at(self) -> str: ...
    @property
    def event(self) -> str: ...
    @property
    def ok(self) -> bool: ...


class DeliveriesApi(Protocol):
    def iter_deliveries(self) -> Iterator[DeliveryRow]: ...

    def redeliver(self, delivery_id: int) -> None: ...


@dataclass
class CatchUpReport:
    listed: int = 0
    failed_unstored: int = 0
    redelivered: list[str] = field(default_factory=list)  # guids
    errors: list[str] = field(default_factory=list)


def _epoch(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def to_redeliver(
    rows: Iterable[DeliveryRow], stored: set[str], *, now: float, window_s: float
) -> list[DeliveryRow]:
    """Pure choice: per guid, if no attempt succeeded and we did not store it, its newest failed attempt."""
    newest_failed: dict[str, DeliveryRow] = {}
    delivered: set[str] = set()
    for row in rows:
        at = _epoch(row.delivered_at)
        if at is not None and now - at > window_s:
            continue
        if row.event not in HANDLED_EVENTS or not row.guid:
            continue
        if row.ok:
            delivered.add(row.guid)
            continue
        prev = newest_failed.get(row.guid)
        if prev is None or row.id > prev.id:
            newest_failed[row.guid] = row
    return [r for g, r in sorted(newest_failed.items()) if g not in delivered and g not in stored]


def catch_up(api: DeliveriesApi, queue: DeliveryLog, *, now: float, window_s: float) -> CatchUpReport:
    report = CatchUpReport()
    rows: list[DeliveryRow] = []
    try:
        for row in api.iter_deliveries():
            at = _epoch(row.delivered_at)
            if at is not None and now - at > window_s:
                break  # newest first: everything after this is older still
            rows.append(row)
    except Exception as exc:  # the App API being down must not keep the server from starting
        report.errors.append(f"list deliveries: {exc}")
        log.warning("catch_up_list_failed", extra={"error": str(exc)})
    report.listed = len(rows)
    stored = queue.stored_guids(sorted({r.guid for r in rows if r.guid}))
    chosen = to_redeliver(rows, stored, now=now, window_s=window_s)
    report.failed_unstored = len(chosen)
    for row in chosen:
        try:
            api.redeliver(row.id)
            report.redelivered.append(row.guid)
        except Exception as exc:
            report.errors.append(f"redeliver {row.id}: {exc}")
            log.warning("catch_up_redeliver_failed", extra={"delivery": row.guid, "error": str(exc)})
    log.info(
        "catch_up_done",
        extra={"listed": report.listed, "redelivered": len(report.redelivered), "errors": len(report.errors)},
    )
    return report
