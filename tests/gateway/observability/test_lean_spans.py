"""The gateway's own span records (gateway/observability/lean_spans.py): parents and links from
W3C trace context, the sampler's say, what a span keeps, and the current span per thread."""

from __future__ import annotations

import itertools
import threading

import pytest

from gateway.observability.lean_spans import (
    DROPPED,
    LeanTracing,
    RecordedSpan,
    Sampler,
    Sampling,
    always_on,
    parent_or_always_on,
    remote_context,
    valid_trace_state,
)
from gateway.observability.tracing import SpanKind

PUBLISHER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
UNSAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


class Recorder:
    """Where ended spans go, with counting ids and a clock that ticks 1 ms per reading."""

    def __init__(self, sampler: Sampler = always_on) -> None:
        self.ended: list[RecordedSpan] = []
        self._ids = itertools.count(0xA0)
        self._ns = itertools.count(1_000_000_000, 1_000_000)
        self.tracing = LeanTracing(
            sampler=sampler,
            new_trace_id=lambda: next(self._ids) << 64,
            new_span_id=lambda: next(self._ids),
            sink=self.ended.append,
            clock_ns=lambda: next(self._ns),
        )


@pytest.mark.parametrize(
    ("traceparent", "valid"),
    [
        (PUBLISHER, True),
        (" " + PUBLISHER + " ", True),
        ("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future", True),
        ("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-more", False),
        ("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", False),
        ("00-00000000000000000000000000000000-b7ad6b7169203331-01", False),
        ("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", False),
        ("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", False),
        ("", False),
        ("garbage", False),
    ],
)
def test_traceparents_are_read_as_w3c_trace_context_says(traceparent: str, valid: bool) -> None:
    for _ in range(2):  # the second time from the parsed cache: the same answer
        context = remote_context({"traceparent": traceparent})
        assert (context is not None) == valid
    if valid:
        assert context is not None and context.remote and context.sampled
        assert context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C


def test_tracestate_is_kept_when_valid_and_dropped_whole_when_not() -> None:
    assert valid_trace_state("congo=t61rcWkgMzE, rojo=00f067aa0ba902b7") == (
        "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
    )
    assert valid_trace_state("tenant@vendor=1") == "tenant@vendor=1"
    assert valid_trace_state("Upper=1") == ""
    assert valid_trace_state("a=1,a=2") == ""  # duplicate keys
    assert valid_trace_state(",".join(f"k{n}=v" for n in range(33))) == ""
    context = remote_context({"traceparent": PUBLISHER, "tracestate": "rojo=00f067aa0ba902b7"})
    assert context is not None and context.trace_state == "rojo=00f067aa0ba902b7"


def test_a_push_span_is_a_child_of_the_carrier_and_linked_to_it() -> None:
    recorder = Recorder()
    creation = {"traceparent": PUBLISHER, "tracestate": "rojo=1"}
    span = recorder.tracing.start(
        "push app",
        SpanKind.CLIENT,
        parent=creation,
        links=[creation],
        attributes={"messaging.system": "smq", "messaging.smq.message.tag": None},
    )
    span.set({"http.response.status_code": 204, "skipped": None})
    carrier = span.carrier()
    span.end()
    [ended] = recorder.ended
    assert ended.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert (ended.parent_span_id, ended.parent_remote) == (0xB7AD6B7169203331, True)
    assert [(link.trace_id, link.span_id) for link in ended.links] == [
        (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)
    ]
    assert ended.attributes == {"messaging.system": "smq", "http.response.status_code": 204}
    assert ended.context.trace_state == "rojo=1"  # the parent's state, handed on
    assert carrier == {
        "traceparent": f"00-0af7651916cd43dd8448eb211c80319c-{ended.context.span_id:016x}-01",
        "tracestate": "rojo=1",
    }
    assert ended.end_ns > ended.start_ns and ended.kind == "client"


def test_a_span_ends_once_and_ignores_what_comes_after() -> None:
    recorder = Recorder()
    span = recorder.tracing.start("send q", SpanKind.SERVER, start_ns=5)
    span.fail("QueueNotExist", "no such queue")
    span.end()
    span.set({"late": 1})
    span.rename("late")
    span.fail("Late")
    span.end()
    [ended] = recorder.ended
    assert (ended.name, ended.start_ns, ended.error) == ("send q", 5, "no such queue")
    assert ended.attributes == {"error.type": "QueueNotExist"}


def test_children_of_a_local_span_and_new_roots() -> None:
    recorder = Recorder()
    send = recorder.tracing.start("send q", SpanKind.SERVER, parent={"traceparent": "bad"})
    create = recorder.tracing.start("create q", SpanKind.PRODUCER, parent=send)
    create.end()
    send.end()
    created, sent = recorder.ended
    assert sent.parent_span_id == 0 and not sent.parent_remote  # an invalid carrier: a root
    assert created.context.trace_id == sent.context.trace_id
    assert (created.parent_span_id, created.parent_remote) == (sent.context.span_id, False)
    assert send.trace_id == f"{sent.context.trace_id:032x}"


def test_the_sampler_decides_and_unsampled_spans_carry_their_context_on() -> None:
    recorder = Recorder(parent_or_always_on)
    span = recorder.tracing.start(
        "push app", SpanKind.CLIENT, parent={"traceparent": UNSAMPLED}, activate=True
    )
    carrier = recorder.tracing.current_carrier()
    span.set({"a": 1})
    span.end()
    assert recorder.ended == []
    assert carrier["traceparent"].startswith("00-0af7651916cd43dd8448eb211c80319c-")
    assert carrier["traceparent"].endswith("-00")  # not sampled, as the parent
    assert recorder.tracing.current_carrier() == {}

    def adds(*_: object) -> Sampling:
        return Sampling(True, {"sampler.rule": "r1"}, "sampler=1")

    added = Recorder(adds)
    added.tracing.start("x", SpanKind.INTERNAL, attributes={"a": 1}).end()
    [ended] = added.ended
    assert ended.attributes == {"a": 1, "sampler.rule": "r1"}
    assert ended.context.trace_state == "sampler=1"
    dropped = Recorder(lambda *_: DROPPED)
    dropped.tracing.start("x", SpanKind.INTERNAL).end()
    assert dropped.ended == []


def test_the_current_span_is_per_thread() -> None:
    recorder = Recorder()
    tracing = recorder.tracing
    span = tracing.start("push a", SpanKind.CLIENT, activate=True)
    seen: list[dict[str, str]] = []
    other = threading.Thread(target=lambda: seen.append(tracing.current_carrier()))
    other.start()
    other.join()
    assert seen == [{}]
    assert tracing.current_carrier() == span.carrier()
    span.end()
    assert tracing.current_carrier() == {}


def test_a_span_that_cannot_be_encoded_is_dropped_not_raised() -> None:
    """Ending a span runs on the push's own path: whatever its values, it must not raise."""
    from gateway.observability.otlp_wire import encode_resource, encode_scope
    from gateway.observability.span_batches import BatchSettings, SpanBatcher

    sent: list[bytes] = []
    batcher = SpanBatcher(
        lambda body: sent.append(body) or True,
        encode_resource({}),
        encode_scope("s"),
        BatchSettings(schedule_delay_ms=60_000),
        "",
    )
    recorder = Recorder()
    recorder.tracing.sink = batcher.add
    broken = recorder.tracing.start("x", SpanKind.CLIENT, start_ns=-1)  # no fixed64 for it
    broken.end()
    recorder.tracing.start("y", SpanKind.CLIENT).end()
    batcher.close()
    assert batcher.dropped == 1 and len(sent) == 1


@pytest.mark.parametrize("sampler", [always_on, lambda *_: DROPPED])
def test_a_spans_carrier_is_a_new_dict_each_time_with_the_same_context(sampler: Sampler) -> None:
    recorder = Recorder(sampler)
    span = recorder.tracing.start("push s", SpanKind.CLIENT, parent={"traceparent": PUBLISHER})
    first = span.carrier()
    first["mns-creation-traceparent"] = PUBLISHER  # a sender adds its own headers to it
    second = span.carrier()
    flags = "01" if sampler is always_on else "00"
    assert second == {"traceparent": first["traceparent"]}
    assert second["traceparent"].startswith(f"00-{PUBLISHER[3:35]}-")
    assert second["traceparent"].endswith(f"-{flags}")
    assert span.trace_id == PUBLISHER[3:35]
