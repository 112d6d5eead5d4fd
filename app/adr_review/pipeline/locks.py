"""Named locks held for the length of a `with` block, over the StateStore's Locks port: waited for
(polling), renewed in the background while held (a slow GitHub call or index sync keeps its lock), and
released at the end. Processes and hosts that share the store exclude each other; a holder that dies
frees its lock when the lease runs out."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

from adr_review.pipeline.state_ports import Locks

LockFactory = Callable[[str], AbstractContextManager[object]]


class LockTimeout(RuntimeError):
    """The lock stayed taken longer than the caller waits (its holder is slow or died recently)."""


def no_lock(name: str) -> AbstractContextManager[object]:
    """Nothing to exclude (one process, one run at a time: the Action)."""
    return contextlib.nullcontext()


@dataclass(frozen=True)
class StoreLocks:
    """A LockFactory over the store: `locks(name)` is a context manager holding that lock."""

    store: Locks
    owner: str
    ttl_s: float = 60.0
    wait_s: float = 120.0
    poll_s: float = 0.05
    sleep: Callable[[float], None] = time.sleep

    def __call__(self, name: str) -> AbstractContextManager[object]:
        return self._held(name)

    @contextlib.contextmanager
    def _held(self, name: str) -> Iterator[object]:
        deadline = time.monotonic() + self.wait_s
        while not self.store.try_lock(name, self.owner, self.ttl_s):
            if time.monotonic() >= deadline:
                raise LockTimeout(f"lock {name} still taken after {self.wait_s:.0f} s")
            self.sleep(self.poll_s)
        done = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(name, done), name=f"lock:{name}", daemon=True)
        renewer.start()
        try:
            yield name
        finally:
            done.set()
            renewer.join()
            self.store.unlock(name, self.owner)

    def _renew(self, name: str, done: threading.Event) -> None:
        while not done.wait(self.ttl_s / 3):
            self.store.try_lock(name, self.owner, self.ttl_s)
