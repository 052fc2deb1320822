"""Each export has an overall deadline, and closing the span batcher never waits past the time
it is given: against a collector on 127.0.0.1 that trickles its answer a byte at a time, and
with transports injected into the batcher (issue 47)."""

from __future__ import annotations

import threading
import time

from gateway.observability.otlp_transports import ExportSettings, HttpSender
from gateway.observability.otlp_wire import encode_resource, encode_scope, export_request
from gateway.observability.span_batches import BatchSettings, SpanBatcher
from gateway.observability.tracing import SpanKind
from tests.gateway.observability.test_lean_spans import Recorder
from tests.otlp_collector import TricklingCollector

BODY = export_request(encode_resource({"service.name": "x"}), encode_scope("s"), [])


def test_an_export_to_a_trickling_collector_ends_at_its_deadline() -> None:
    """Each read gets a byte within the socket's timeout: only the overall deadline ends it."""
    with TricklingCollector(every=0.05) as collector:
        send = HttpSender(ExportSettings(endpoint=f"{collector.endpoint}/v1/traces", timeout_s=1))
        started = time.monotonic()
        try:
            assert send(BODY) is False
        finally:
            send.close()
        took = time.monotonic() - started
    assert collector.connections == 1  # not tried again: the deadline covers the retries too
    assert took < 30, took  # bounded; before, it read the endless answer for ever


def test_abort_cuts_the_export_in_flight() -> None:
    with TricklingCollector(every=0.05) as collector:
        send = HttpSender(ExportSettings(endpoint=f"{collector.endpoint}/v1/traces", timeout_s=600))
        outcome: list[bool] = []
        exporting = threading.Thread(target=lambda: outcome.append(send(BODY)))
        exporting.start()
        deadline = time.monotonic() + 30
        while collector.connections == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        send.abort()
        exporting.join(30)
        assert not exporting.is_alive()
        assert outcome == [False]
        assert send(BODY) is False  # and every later one, without connecting
        assert collector.connections == 1
        send.close()


class StuckTransport:
    """A send that never returns until aborted; records the batcher's calls."""

    def __init__(self) -> None:
        self.aborted = threading.Event()
        self.finished = False
        self.sent = 0

    def __call__(self, body: bytes) -> bool:
        self.sent += 1
        self.aborted.wait(60)
        return False

    def finish(self) -> None:
        self.finished = True

    def abort(self) -> None:
        self.aborted.set()


def batcher_with(send: StuckTransport, batch: int = 2) -> SpanBatcher:
    return SpanBatcher(
        send,
        encode_resource({}),
        encode_scope("s"),
        BatchSettings(schedule_delay_ms=60_000, max_queue_size=100, max_export_batch_size=batch),
        "",
        finish=send.finish,
        abort=send.abort,
    )


def add_spans(batcher: SpanBatcher, count: int) -> None:
    recorder = Recorder()
    recorder.tracing.sink = batcher.add
    for index in range(count):
        recorder.tracing.start(f"s{index}", SpanKind.CLIENT).end()


def test_close_drops_what_the_collector_did_not_take_in_time() -> None:
    send = StuckTransport()
    batcher = batcher_with(send)
    add_spans(batcher, 5)  # two batches go at once, one of which hangs; three spans wait
    started = time.monotonic()
    batcher.close(timeout=0.2)
    assert time.monotonic() - started < 30  # bounded, not the stuck export's 60 s
    assert send.finished and send.aborted.is_set()
    assert batcher.dropped >= 1  # the spans still queued


def test_close_in_time_sends_everything_and_cuts_nothing() -> None:
    sent: list[bytes] = []
    finished: list[bool] = []
    aborted: list[bool] = []
    batcher = SpanBatcher(
        lambda body: sent.append(body) or True,
        encode_resource({}),
        encode_scope("s"),
        BatchSettings(schedule_delay_ms=60_000, max_export_batch_size=2),
        "",
        finish=lambda: finished.append(True),
        abort=lambda: aborted.append(True),
    )
    add_spans(batcher, 5)
    batcher.close(timeout=30)
    assert len(sent) == 3 and batcher.dropped == 0
    assert finished == [True] and aborted == []
