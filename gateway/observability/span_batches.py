"""Ended spans, exported in batches on a thread of their own, as the SDK's
``BatchSpanProcessor`` does and with its ``OTEL_BSP_*`` settings: a push or a request encodes
its span as it ends (:mod:`gateway.observability.otlp_wire`) and appends the bytes to a queue;
every ``schedule_delay`` (or as soon as a batch is full) the thread joins what is queued into
one export request and hands it to the transport. A full queue drops new spans, counted and
logged once, rather than holding up deliveries. Under gevent (the worker class by default,
which patches threading before tracing starts) the thread is a greenlet on the process's one
OS thread: no GIL hand-offs, and the queue signals it only when a batch is full.

Why encode at the end rather than on the thread: a queue of span objects (each with its dict
and lists) lives for seconds, long enough to be promoted through the garbage collector's
generations and to bring on its full collections, which traverse the whole heap; bytes are
not tracked by the collector at all (docs/benchmarks.md#tracing)."""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gateway.observability.lean_spans import RecordedSpan
from gateway.observability.otlp_wire import AttributeCache, encode_span, export_request

log = logging.getLogger(__name__)

#: Sends one ``ExportTraceServiceRequest``'s bytes; False when the collector did not take it.
Send = Callable[[bytes], bool]
#: How long :meth:`SpanBatcher.close` waits for the export thread once it cut the export in
#: flight (it only has to notice its socket was shut down).
ABORT_GRACE_S = 1.0


def _nothing() -> None:
    return None


@dataclass(frozen=True, slots=True)
class BatchSettings:
    """The SDK's ``OTEL_BSP_*`` variables, with its defaults (delays in milliseconds)."""

    schedule_delay_ms: float = 5000
    max_queue_size: int = 2048
    max_export_batch_size: int = 512

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> BatchSettings:
        def number(name: str, default: float) -> float:
            try:
                value = float(env.get(name, "") or default)
            except ValueError:
                log.warning("%s=%r is not a number; using %s", name, env[name], default)
                return default
            return value if value > 0 else default

        queue = int(number("OTEL_BSP_MAX_QUEUE_SIZE", 2048))
        batch = int(number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512))
        return cls(number("OTEL_BSP_SCHEDULE_DELAY", 5000), queue, min(batch, queue))


class SpanBatcher:
    """``add`` from any thread; ``close`` exports what is left and stops the thread.

    ``finish`` and ``abort`` are the transport's (:class:`~gateway.observability.
    otlp_transports.HttpSender`'s): at ``close`` a failed export is not tried again, and one
    still running when ``close``'s time is up is cut."""

    def __init__(
        self,
        send: Send,
        resource: bytes,
        scope: bytes,
        settings: BatchSettings,
        schema_url: str,
        *,
        finish: Callable[[], None] = _nothing,
        abort: Callable[[], None] = _nothing,
    ) -> None:
        self._send, self._finish, self._abort = send, finish, abort
        self._resource = resource
        self._scope = scope
        self._schema_url = schema_url
        self._settings = settings
        self._attributes = AttributeCache()
        self._queue: deque[bytes] = deque()
        self._wake = threading.Event()
        self._closed = False
        self.dropped = 0
        self.failed_exports = 0
        self._thread = self._start()
        # Threads do not survive fork: a forked child (gunicorn's workers) starts its own.
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: (batcher := ref()) and batcher._restart())

    def add(self, span: RecordedSpan) -> None:
        queue = self._queue
        if len(queue) >= self._settings.max_queue_size:
            self.dropped += 1
            if self.dropped == 1:
                log.warning("the span queue is full: spans are dropped until it drains")
            return
        try:
            encoded = encode_span(span, self._attributes)
        except Exception:  # a span that cannot be written never fails the push that ended it
            log.exception("span %r could not be encoded; dropped", span.name)
            self.dropped += 1
            return
        queue.append(encoded)  # deque.append is atomic: no lock on the push's path
        if len(queue) >= self._settings.max_export_batch_size and not self._wake.is_set():
            self._wake.set()

    def close(self, timeout: float | None = None) -> None:
        """Export every queued span within ``timeout`` seconds (``None``: however long it
        takes), then stop (idempotent). What is not sent by then is dropped, counted and logged:
        a stopping process never waits on a slow collector past the time it was given."""
        if self._closed:
            return
        self._closed = True
        self._finish()
        self._wake.set()
        self._thread.join(timeout)
        if not self._thread.is_alive():
            return
        left = len(self._queue)
        self._queue.clear()
        self.dropped += left
        log.warning(
            "the trace collector took no answer within %.1f s at shutdown: %d queued spans "
            "dropped, and the export in flight cut",
            timeout,
            left,
        )
        self._abort()
        self._thread.join(ABORT_GRACE_S)

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name="mns-span-export", daemon=True)
        thread.start()
        return thread

    def _restart(self) -> None:
        self._queue.clear()
        self._wake = threading.Event()
        if not self._closed:
            self._thread = self._start()

    def _run(self) -> None:
        delay = self._settings.schedule_delay_ms / 1000
        while not self._closed:
            full = self._wake.wait(delay)
            self._wake.clear()
            self._export_queued(everything=not full or self._closed)
        self._export_queued(everything=True)

    def _export_queued(self, everything: bool) -> None:
        """Full batches, one request each; the rest too when the schedule (not a full batch)
        woke the thread, or at the end. Under steady load the rest waits for the next full
        batch: fewer, larger requests."""
        queue, size = self._queue, self._settings.max_export_batch_size
        while len(queue) >= size or (everything and queue):
            self._export([queue.popleft() for _ in range(min(size, len(queue)))])

    def _export(self, batch: list[bytes]) -> None:
        try:
            sent = self._send(export_request(self._resource, self._scope, batch, self._schema_url))
        except Exception:  # a collector's failure never stops the tracing of what follows
            log.exception("exporting %d spans failed", len(batch))
            sent = False
        if not sent:
            self.failed_exports += 1
