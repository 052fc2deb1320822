"""The hand-written OTLP encoder (gateway/observability/otlp_wire.py) against its oracle:
``opentelemetry-proto`` decodes what it writes to the same spans, for any span the gateway can
record."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from gateway.observability.lean_spans import SpanContext
from gateway.observability.otlp_wire import (
    HAS_IS_REMOTE,
    IS_REMOTE,
    KIND_NUMBERS,
    AttributeCache,
    encode_resource,
    encode_scope,
    encode_span,
    export_request,
    varint,
)


@dataclass
class Span:
    context: SpanContext
    name: str
    kind: str
    parent_span_id: int = 0
    parent_remote: bool = False
    start_ns: int = 0
    end_ns: int = 0
    attributes: dict[str, object] = field(default_factory=dict)
    links: list[SpanContext] = field(default_factory=list)
    error: str | None = None


def value_of(value: AnyValue) -> object:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


def decoded(body: bytes) -> ExportTraceServiceRequest:
    return ExportTraceServiceRequest.FromString(body)


ids = st.integers(1, 2**64 - 1)
trace_ids = st.integers(1, 2**128 - 1)
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)  # no lone surrogates
scalars = st.one_of(
    texts, st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False)
)
values = st.one_of(
    scalars, st.lists(texts, max_size=4), st.lists(st.integers(0, 2**40), max_size=3)
)
contexts = st.builds(
    SpanContext,
    trace_ids,
    ids,
    st.booleans(),
    st.just(True),
    st.sampled_from(["", "vendor=abc", "a=1,b@x=2"]),
)
spans = st.builds(
    Span,
    context=contexts,
    name=texts,
    kind=st.sampled_from(sorted(KIND_NUMBERS)),
    parent_span_id=st.one_of(st.just(0), ids),
    parent_remote=st.booleans(),
    start_ns=st.integers(0, 2**64 - 1),
    end_ns=st.integers(0, 2**64 - 1),
    attributes=st.dictionaries(texts, values, max_size=8),
    links=st.lists(contexts, max_size=3),
    error=st.one_of(st.none(), texts),
)


def same_value(got: object, wanted: object) -> bool:
    if isinstance(wanted, float):
        return isinstance(got, float) and (got == wanted or math.isclose(got, wanted))
    if isinstance(wanted, list):
        return (
            isinstance(got, list)
            and len(got) == len(wanted)
            and all(same_value(g, w) for g, w in zip(got, wanted, strict=True))
        )
    return got == wanted and type(got) is type(wanted)


@settings(max_examples=300, deadline=None)
@given(st.lists(spans, min_size=1, max_size=5), st.booleans())
def test_what_is_written_decodes_to_the_same_spans(batch: list[Span], twice: bool) -> None:
    cache = AttributeCache()
    if twice:  # the second time from the cache: the same bytes
        first = [encode_span(span, cache) for span in batch]
        assert [encode_span(span, cache) for span in batch] == first
    resource = encode_resource({"service.name": "mns-gateway", "host.cores": 2, "up": True})
    body = export_request(
        resource,
        encode_scope("mns-push.gateway", "1.0"),
        [encode_span(s, cache) for s in batch],
        "https://opentelemetry.io/schemas/1.21.0",
    )
    request = decoded(body)
    [resource_spans] = request.resource_spans
    assert resource_spans.schema_url == "https://opentelemetry.io/schemas/1.21.0"
    assert {a.key: value_of(a.value) for a in resource_spans.resource.attributes} == {
        "service.name": "mns-gateway",
        "host.cores": 2,
        "up": True,
    }
    [scope_spans] = resource_spans.scope_spans
    assert (scope_spans.scope.name, scope_spans.scope.version) == ("mns-push.gateway", "1.0")
    assert len(scope_spans.spans) == len(batch)
    for got, wanted in zip(scope_spans.spans, batch, strict=True):
        assert got.trace_id == wanted.context.trace_id.to_bytes(16, "big")
        assert got.span_id == wanted.context.span_id.to_bytes(8, "big")
        assert got.trace_state == wanted.context.trace_state
        parent = wanted.parent_span_id.to_bytes(8, "big") if wanted.parent_span_id else b""
        assert got.parent_span_id == parent
        assert got.name == wanted.name
        assert got.kind == KIND_NUMBERS[wanted.kind]
        assert (got.start_time_unix_nano, got.end_time_unix_nano) == (
            wanted.start_ns,
            wanted.end_ns,
        )
        attributes = {a.key: value_of(a.value) for a in got.attributes}
        assert attributes.keys() == wanted.attributes.keys()
        for key, value in wanted.attributes.items():
            assert same_value(attributes[key], value), (key, attributes[key], value)
        assert [(link.trace_id, link.span_id, link.trace_state) for link in got.links] == [
            (c.trace_id.to_bytes(16, "big"), c.span_id.to_bytes(8, "big"), c.trace_state)
            for c in wanted.links
        ]
        assert all(link.flags == HAS_IS_REMOTE | IS_REMOTE for link in got.links)
        assert got.flags == HAS_IS_REMOTE | (IS_REMOTE if wanted.parent_remote else 0)
        if wanted.error is None:
            assert got.status.code == 0
        else:
            assert got.status.code == 2  # STATUS_CODE_ERROR
            assert got.status.message == wanted.error


def round_trip(span: Span) -> Any:
    """The one span of a request that holds only ``span``, decoded."""
    body = export_request(
        encode_resource({}), encode_scope("s"), [encode_span(span, AttributeCache())]
    )
    [got] = decoded(body).resource_spans[0].scope_spans[0].spans
    return got


def test_lists_of_numbers_and_strings_decode_element_by_element() -> None:
    span = Span(
        SpanContext(1, 2, True),
        "receive q",
        "server",
        attributes={"handles": ["a", "b"], "counts": [1, 2], "empty": [], "x": -1, "f": 0.5},
    )
    got = round_trip(span)
    assert {a.key: value_of(a.value) for a in got.attributes} == {
        "handles": ["a", "b"],
        "counts": [1, 2],
        "empty": [],
        "x": -1,
        "f": 0.5,
    }


def test_values_otlp_cannot_carry_are_left_out_not_failing_the_batch() -> None:
    span = Span(
        SpanContext(1, 2, True),
        "s",
        "client",
        attributes={
            "nested": [["a"]],
            "object": object(),
            "too big": 2**64,
            "mapping": {"a": 1},
            "kept": "yes",
            "lone surrogate": "a\ud800b",  # replaced, not a failed export
        },
    )
    got = round_trip(span)
    assert {a.key: value_of(a.value) for a in got.attributes} == {
        "kept": "yes",
        "lone surrogate": "a?b",
    }


@given(st.integers(0, 2**64 - 1))
def test_varints_are_protobufs(value: int) -> None:
    # An AnyValue's int_value field (3) holding the value, decoded by protobuf itself.
    parsed = AnyValue.FromString(b"\x18" + varint(value))
    assert parsed.int_value == (value if value < 2**63 else value - 2**64)


def test_the_attribute_cache_stays_bounded() -> None:
    cache = AttributeCache()
    for n in range(40_000):
        cache.field("messaging.message.id", f"M{n}")
    assert len(cache) <= 16384
