"""W3C trace context (``traceparent``, ``tracestate``) as it comes from outside: parsed, and
written anew or dropped (pure).

A request's headers and a message's SystemProperties are the client's text. Nothing of it goes
on as it came, as a span's parent or link, a push header or a SystemProperty the gateway adds:
only what this module writes back. A ``traceparent`` SystemProperty holding CR/LF, copied
verbatim into every push's ``mns-creation-traceparent`` header, would fail each push of it and
open a healthy endpoint's breaker; an oversized ``tracestate`` header would be stored with every
message and go out on every push (issue 47).

The rules are W3C Trace Context's: ``version-traceid-parentid-flags`` in lowercase hex, version
``ff`` and all-zero ids invalid, a version-00 value with more fields invalid (a later version's
extra fields are dropped: it is written as version 00); a ``tracestate`` of at most 32 list
members with valid keys and values, each key once (anything else drops it whole, as the
OpenTelemetry SDK does), cut to 512 characters as the specification advises: members over 128
characters go first, then members from the end.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Final, NamedTuple

TRACEPARENT: Final = "traceparent"
TRACESTATE: Final = "tracestate"

_TRACEPARENT: Final = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
#: A tracestate list member: a simple or multi-tenant key, ``=``, a value of printable ASCII
#: without ``,`` and ``=`` (spaces inside, not at its end), optional spaces and tabs around.
_MEMBER: Final = re.compile(
    r"[ \t]*([a-z][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})"
    r"=([\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e])[ \t]*"
)
MAX_MEMBERS: Final = 32
#: What a vendor should propagate at least, and what this gateway propagates at most.
MAX_TRACESTATE_CHARS: Final = 512
#: Members longer than this are the first to go when a tracestate must be cut.
LARGE_MEMBER_CHARS: Final = 128


class TraceParent(NamedTuple):
    """A valid ``traceparent``: the trace, the parent span and the flags byte."""

    trace_id: int
    parent_id: int
    flags: int

    @property
    def sampled(self) -> bool:
        return bool(self.flags & 1)

    def header(self) -> str:
        """Written as version 00."""
        return f"00-{self.trace_id:032x}-{self.parent_id:016x}-{self.flags:02x}"


@lru_cache(maxsize=4096)
def parse_traceparent(value: str) -> TraceParent | None:
    """The context ``value`` names, or ``None`` when it is not a valid ``traceparent``.

    Cached: a message fanned out to N subscriptions is pushed (and retried) with one value."""
    match = _TRACEPARENT.fullmatch(value.strip(" \t"))
    if match is None:
        return None
    version, trace_hex, parent_hex, flags, rest = match.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    trace_id, parent_id = int(trace_hex, 16), int(parent_hex, 16)
    if not trace_id or not parent_id:
        return None
    return TraceParent(trace_id, parent_id, int(flags, 16))


def normalized_traceparent(value: str) -> str:
    """``value`` written anew, or ``""`` when it is not a valid ``traceparent``."""
    parsed = parse_traceparent(value)
    return parsed.header() if parsed else ""


def normalized_tracestate(value: str) -> str:
    """``value``'s members (spaces around them removed), cut to the limits; ``""`` when it is
    not a valid ``tracestate``."""
    members: list[str] = []
    keys: set[str] = set()
    for member in value.split(","):
        if not member.strip(" \t"):
            continue  # empty list members are allowed, and dropped
        match = _MEMBER.fullmatch(member)
        if match is None or match.group(1) in keys or len(members) == MAX_MEMBERS:
            return ""
        keys.add(match.group(1))
        members.append(member.strip(" \t"))
    return ",".join(_within_limit(members))


def _within_limit(members: list[str]) -> list[str]:
    size = len(",".join(members))
    if size <= MAX_TRACESTATE_CHARS:
        return members
    kept = list(members)
    for index in reversed(range(len(kept))):  # the large ones first, from the end
        if size <= MAX_TRACESTATE_CHARS:
            return kept
        if len(kept[index]) > LARGE_MEMBER_CHARS:
            size -= len(kept.pop(index)) + (1 if kept else 0)
    while kept and size > MAX_TRACESTATE_CHARS:  # then any, from the end
        size -= len(kept.pop()) + (1 if kept else 0)
    return kept


def normalized_carrier(carrier: Mapping[str, str]) -> dict[str, str]:
    """``traceparent`` and ``tracestate`` of ``carrier`` written anew; empty when its
    ``traceparent`` is missing or invalid (a ``tracestate`` means nothing without one)."""
    traceparent = normalized_traceparent(carrier.get(TRACEPARENT, ""))
    if not traceparent:
        return {}
    found = {TRACEPARENT: traceparent}
    if state := normalized_tracestate(carrier.get(TRACESTATE, "")):
        found[TRACESTATE] = state
    return found
