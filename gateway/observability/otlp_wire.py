"""OTLP trace export requests written straight to protobuf bytes (pure).

The gateway's spans have one shape (:class:`gateway.observability.lean_spans.RecordedSpan`:
ids, name, kind, times, primitive attributes, links, a status), so they are encoded here with a
few byte concatenations instead of building ``opentelemetry-proto`` message objects and
serializing them, which was most of a traced push's extra CPU with the SDK's encoder
(docs/benchmarks.md#tracing). The layout is ``opentelemetry/proto/trace/v1/trace.proto``'s and
``collector/trace/v1/trace_service.proto``'s; tests decode what this writes with
``opentelemetry-proto`` itself.

The performance trick: an attribute's encoded ``KeyValue`` is cached by key and value, since
most of a span's attributes repeat from span to span (system, operation, topic, subscription,
endpoint, outcome, status); a span then costs its ids, times and a join.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

#: ``Span.SpanKind`` numbers.
KIND_NUMBERS: Final = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
STATUS_ERROR: Final = 2
#: ``SpanFlags``: the span's parent (or a link's context) says whether it is remote.
HAS_IS_REMOTE: Final = 0x100
IS_REMOTE: Final = 0x200
_INT64: Final = (-(2**63), 2**63 - 1)
_CACHE_LIMIT: Final = 16384
_CACHED: Final = (str, int, bool)

_SMALL_VARINTS: Final = [bytes([n]) for n in range(128)]
_fixed64 = struct.Struct("<Q").pack
_fixed32 = struct.Struct("<I").pack
_double = struct.Struct("<d").pack


class Context(Protocol):
    """A span's or a link's identity (:class:`~gateway.observability.lean_spans.SpanContext`)."""

    @property
    def trace_id(self) -> int: ...
    @property
    def span_id(self) -> int: ...
    @property
    def trace_state(self) -> str: ...


class Encodable(Protocol):
    """What :func:`encode_span` reads (:class:`~gateway.observability.lean_spans.RecordedSpan`)."""

    context: Context
    name: str
    kind: str
    parent_span_id: int
    parent_remote: bool
    start_ns: int
    end_ns: int
    attributes: dict[str, object]
    links: Sequence[Context]
    error: str | None


def varint(value: int) -> bytes:
    """A non-negative integer as a protobuf varint."""
    if value < 128:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: its tag byte(s), the length, the payload."""
    return tag + varint(len(payload)) + payload


def _text(value: str) -> bytes:
    # A lone surrogate cannot be UTF-8: replaced rather than failing the whole batch.
    return value.encode("utf-8", "replace")


def any_value(value: object) -> bytes | None:
    """An ``AnyValue`` (string, bool, int64, double, or an array of those); ``None`` for what
    OTLP cannot carry (as the SDK drops attributes of other types)."""
    if isinstance(value, str):
        return _field(b"\x0a", _text(value))
    if isinstance(value, bool):  # before int: a bool is an int
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            return None
        return b"\x18" + varint(value & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, float):
        return b"\x21" + _double(value)
    if isinstance(value, list | tuple):
        items = []
        for item in value:
            if isinstance(item, list | tuple):
                return None  # OTLP arrays of arrays exist; attribute values never hold them
            encoded = b"" if item is None else any_value(item)
            if encoded is None:
                return None
            items.append(_field(b"\x0a", encoded))
        return _field(b"\x2a", b"".join(items))
    return None


def key_value(key: str, value: object) -> bytes:
    """A ``KeyValue``, or ``b""`` when the value cannot be carried."""
    encoded = any_value(value)
    if encoded is None:
        return b""
    return _field(b"\x0a", _text(key)) + _field(b"\x12", encoded)


class AttributeCache:
    """Encoded ``KeyValue`` fields (``Span.attributes``, tag 9) by key and value (strings,
    ints, bools; the rest is encoded each time). Bounded: cleared when full (ids and times are
    not in it, so it fills only with values that vary, like message ids, and then starts
    over)."""

    def __init__(self, tag: bytes = b"\x4a") -> None:
        self._tag = tag
        self._known: dict[tuple[str, type, object], bytes] = {}

    def __len__(self) -> int:
        return len(self._known)

    def field(self, key: str, value: object) -> bytes:
        if value.__class__ not in _CACHED:  # lists; floats (-0.0 == 0.0, nan != nan)
            return self._encode(key, value)
        cache_key = (key, value.__class__, value)
        found = self._known.get(cache_key)
        if found is None:
            if len(self._known) >= _CACHE_LIMIT:
                self._known.clear()
            found = self._known[cache_key] = self._encode(key, value)
        return found

    def fields(self, attributes: Mapping[str, object]) -> bytes:
        # :meth:`field`, inlined: a dozen attributes per span, a function call each was a
        # tenth of the encoding.
        known, out = self._known, []
        for key, value in attributes.items():
            found = known.get((key, value.__class__, value)) if value.__class__ in _CACHED else None
            out.append(self.field(key, value) if found is None else found)
        return b"".join(out)

    def _encode(self, key: str, value: object) -> bytes:
        encoded = key_value(key, value)
        return _field(self._tag, encoded) if encoded else b""


def _link(link: Context) -> bytes:
    body = b"\x0a\x10" + link.trace_id.to_bytes(16, "big") + b"\x12\x08"
    body += link.span_id.to_bytes(8, "big")
    if link.trace_state:
        body += _field(b"\x1a", _text(link.trace_state))
    return _field(b"\x6a", body + b"\x35" + _fixed32(HAS_IS_REMOTE | IS_REMOTE))


def encode_span(span: Encodable, attributes: AttributeCache) -> bytes:
    """One ``Span`` message, framed as ``ScopeSpans.spans`` (field 2)."""
    context = span.context
    parts = [
        b"\x0a\x10",
        context.trace_id.to_bytes(16, "big"),
        b"\x12\x08",
        context.span_id.to_bytes(8, "big"),
    ]
    if context.trace_state:
        parts.append(_field(b"\x1a", _text(context.trace_state)))
    if span.parent_span_id:
        parts += (b"\x22\x08", span.parent_span_id.to_bytes(8, "big"))
    name = _text(span.name)
    parts += (
        b"\x2a",
        _SMALL_VARINTS[len(name)] if len(name) < 128 else varint(len(name)),
        name,
        b"\x30",
        _SMALL_VARINTS[KIND_NUMBERS[span.kind]],
        b"\x39",
        _fixed64(span.start_ns),
        b"\x41",
        _fixed64(span.end_ns),
        attributes.fields(span.attributes),
    )
    parts += [_link(link) for link in span.links]
    if span.error is not None:
        status = _field(b"\x12", _text(span.error)) if span.error else b""
        parts.append(_field(b"\x7a", status + b"\x18" + _SMALL_VARINTS[STATUS_ERROR]))
    flags = HAS_IS_REMOTE | (IS_REMOTE if span.parent_remote else 0)
    parts += (b"\x85\x01", _fixed32(flags))
    return _field(b"\x12", b"".join(parts))


def encode_resource(attributes: Mapping[str, object]) -> bytes:
    """``ResourceSpans.resource`` (field 1): a ``Resource`` with these attributes."""
    return _field(b"\x0a", AttributeCache(b"\x0a").fields(attributes))


def encode_scope(name: str, version: str = "") -> bytes:
    """``ScopeSpans.scope`` (field 1): an ``InstrumentationScope``."""
    body = _field(b"\x0a", _text(name))
    if version:
        body += _field(b"\x12", _text(version))
    return _field(b"\x0a", body)


def export_request(
    resource: bytes, scope: bytes, spans: Iterable[bytes], schema_url: str = ""
) -> bytes:
    """An ``ExportTraceServiceRequest`` of one resource and one scope, from the fields that
    :func:`encode_resource`, :func:`encode_scope` and :func:`encode_span` wrote."""
    scope_spans = _field(b"\x12", scope + b"".join(spans))
    resource_spans = resource + scope_spans
    if schema_url:
        resource_spans += _field(b"\x1a", _text(schema_url))
    return _field(b"\x0a", resource_spans)
