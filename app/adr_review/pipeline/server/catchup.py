"""Catch-up: GitHub does not redeliver a failed webhook by itself, so the App lists its recent deliveries
(`GET /app/hook/deliveries`) and asks for a redelivery of every failed one whose X-GitHub-Delivery
(guid) it has not stored and that no later attempt delivered: on start (after a downtime) and then
periodically in every web process (a delivery refused while the database blipped), each pass reading
only what is newer than what an earlier pass settled.

One redelivery request per guid and failed attempt, only for events the server handles, only inside
the window GitHub keeps deliveries for (3 days); the redelivery comes back through POST /webhook like
any delivery, so its signature is checked and it is deduplicated like any other (the store's key is
(hook id, guid)): two processes asking for the same guid cost a duplicate delivery, never a second run.
Passes of several processes also take turns on the store's `catch-up` lock, so they rarely ask twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from adr_review.pipeline.server.intake import HANDLED_EVENTS
from adr_review.pipeline.state_ports import DeliveryLog, Locks

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
    """One pass over the whole window (what the process does on start)."""
    return CatchUp(api, queue, window_s).run(now)


@dataclass
class CatchUp:
    """Catch-up passes of one process. `since`: the attempts up to this id were settled by an earlier
    pass (stored, delivered, or too old), so a pass lists only newer ones and stops there; an attempt
    it asked GitHub to repeat, or one of the last `overlap_s` (GitHub may list an attempt after a
    newer one), keeps `since` below it until a later pass sees how it ended."""

    api: DeliveriesApi
    queue: DeliveryLog
    window_s: float
    overlap_s: float = 120.0
    reask_after_s: float = 600.0  # a redelivery asked for that never showed up is asked for again
    since: int = 0
    asked: dict[str, tuple[int, float]] = field(default_factory=dict)  # guid -> (attempt id, when)

    def run(self, now: float) -> CatchUpReport:
        report = CatchUpReport()
        rows: list[DeliveryRow] = []
        complete = True
        try:
            for row in self.api.iter_deliveries():
                at = _epoch(row.delivered_at)
                if row.id <= self.since or (at is not None and now - at > self.window_s):
                    break  # newest first: everything after this is settled or older still
                rows.append(row)
        except Exception as exc:  # the App API being down must not keep the server from starting
            complete = False
            report.errors.append(f"list deliveries: {exc}")
            log.warning("catch_up_list_failed", extra={"error": str(exc)})
        report.listed = len(rows)
        stored = self.queue.stored_guids(sorted({r.guid for r in rows if r.guid}))
        chosen = to_redeliver(rows, stored, now=now, window_s=self.window_s)
        report.failed_unstored = len(chosen)
        asked: dict[str, tuple[int, float]] = {}
        for row in chosen:
            before = self.asked.get(row.guid)
            if before is not None and before[0] == row.id and now - before[1] < self.reask_after_s:
                asked[row.guid] = before  # asked already: its redelivery is not listed yet
                continue
            try:
                self.api.redeliver(row.id)
                report.redelivered.append(row.guid)
                asked[row.guid] = (row.id, now)
            except Exception as exc:
                report.errors.append(f"redeliver {row.id}: {exc}")
                log.warning("catch_up_redeliver_failed", extra={"delivery": row.guid, "error": str(exc)})
        self.asked = asked  # the others were settled: stored, delivered, or asked again under a newer id
        if complete and rows:
            recent = [r.id for r in rows if (_epoch(r.delivered_at) or now) > now - self.overlap_s]
            self.since = min([max(r.id for r in rows), *(r.id - 1 for r in chosen), *(i - 1 for i in recent)])
        log.info(
            "catch_up_done",
            extra={
                "listed": report.listed,
                "redelivered": len(report.redelivered),
                "errors": len(report.errors),
                "since": self.since,
            },
        )
        return report


CATCH_UP_LOCK = "catch-up"


def keep_catching_up(
    catch: CatchUp,
    locks: Locks,
    owner: str,
    *,
    every_s: float,
    stop: threading.Event,
    clock: Callable[[], float] = time.time,
    on_pass: Callable[[CatchUpReport], None] | None = None,
) -> None:
    """A pass now, then one every `every_s` until `stop`: a delivery refused while the store was down
    is asked for again within about `every_s` of the store being back. A pass another process holds
    the store's lock for is skipped (what it finds is stored for both)."""
    while True:
        try:
            if locks.try_lock(CATCH_UP_LOCK, owner, max(30.0, 2 * every_s)):  # a dead holder's: 2 periods
                try:
                    report = catch.run(clock())
                finally:
                    locks.unlock(CATCH_UP_LOCK, owner)
                if on_pass is not None:
                    on_pass(report)
            else:
                log.info("catch_up_skipped", extra={"why": "another process is catching up"})
        except Exception as exc:  # the store down: the next pass tries again
            log.warning("catch_up_failed", extra={"error": f"{type(exc).__name__}: {exc}"})
        if stop.wait(every_s):
            return
