"""Recording attempt outcomes off the push threads, many per transaction.

A push thread that waited for its outcome to be committed would spend much of its time waiting.
Instead it hands a :class:`Settlement` to the settler and takes the next delivery; the settler
commits whatever arrives within ``linger`` seconds of the first outcome in one write. (Under
gevent the settler runs as soon as the first outcome arrives: without the wait, nearly every
push got a transaction of its own.) A settle costs about as much CPU for one outcome
as for dozens, so the linger is long enough for a busy worker's settles to carry a few dozen
(docs/benchmarks.md#settles-twice-as-large); but once no further outcome can come soon
(``more_coming``: for the worker, no push in flight, claimed or being claimed), what has
arrived is committed at once: a quiet worker records each outcome without waiting. Until that
commit the delivery is still leased, so nobody else takes it; if the process dies first, the
lease lapses and the push is made again, which at-least-once delivery allows.

A database that is briefly away (restarting, failing over) does not cost the outcomes: a batch
that fails with :class:`~gateway.errors.StoreUnavailableError` is tried again with a
growing delay for up to ``retry_for`` seconds (less than a lease), so pushes already made are not
made again once the database is back.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from gateway.delivery.records import Filed, Settlement
from gateway.errors import StoreUnavailableError
from gateway.pushing.push_store import PushStore

log = logging.getLogger(__name__)

_STOP = object()


class Settler:
    def __init__(
        self,
        store: PushStore,
        owner: str,
        on_settled: Callable[[list[Settlement], list[Filed | None]], None],
        max_batch: int = 512,
        linger: float = 0.025,
        retry_for: float = 30.0,
        more_coming: Callable[[], bool] | None = None,
    ) -> None:
        """``more_coming``: whether outcomes may still arrive soon; once it says no, a batch is
        committed without waiting out the linger. Without it the linger is always waited out."""
        self.store = store
        self.owner = owner
        self.on_settled = on_settled
        self.max_batch = max_batch
        self.linger = linger
        self.retry_for = retry_for
        self._more_coming = more_coming
        self._stopping = threading.Event()
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="mns-settle", daemon=True)
        self._thread.start()

    def submit(self, settlement: Settlement) -> None:
        self._queue.put(settlement)

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        self._queue.put(_STOP)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            batch, stop = self._next_batch()
            if batch:
                self._settle(batch)
            if stop:
                return

    def _next_batch(self) -> tuple[list[Settlement], bool]:
        first = self._queue.get()
        if first is _STOP:
            return [], True
        batch: list[Settlement] = [first]  # type: ignore[list-item]
        deadline = time.monotonic() + self.linger
        while len(batch) < self.max_batch:
            try:
                if self._more_coming is None or self._more_coming():
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                else:
                    item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return batch, True
            batch.append(item)  # type: ignore[arg-type]
        return batch, False

    def _settle(self, batch: list[Settlement]) -> None:
        try:
            letters = self._record(batch)
        except StoreUnavailableError:  # logged once per outage by the store
            letters = [None] * len(batch)
        except Exception:  # leases lapse and the deliveries are tried again
            log.exception("could not record %d delivery outcomes", len(batch))
            letters = [None] * len(batch)
        self.on_settled(batch, letters)

    def _record(self, batch: list[Settlement]) -> list[Filed | None]:
        """``store.settle``, tried again while the database is unavailable, for ``retry_for``
        seconds at most (the leases are still held: nobody else pushes these meanwhile)."""
        deadline = time.monotonic() + self.retry_for
        delay = 0.25
        while True:
            try:
                return self.store.settle(self.owner, batch)
            except StoreUnavailableError:
                if time.monotonic() + delay > deadline or self._stopping.wait(delay):
                    raise
                delay = min(2.0, delay * 2)
