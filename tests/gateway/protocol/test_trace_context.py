"""W3C trace context as it comes from a request or a message, parsed and written anew or dropped
(:mod:`gateway.protocol.trace_context`, issue 47), and the creation context a message's
SystemProperties give (:func:`gateway.protocol.properties.trace_context`)."""

from __future__ import annotations

import pytest

from gateway.protocol.properties import trace_context, with_trace_context
from gateway.protocol.trace_context import (
    MAX_TRACESTATE_CHARS,
    normalized_carrier,
    normalized_traceparent,
    normalized_tracestate,
    parse_traceparent,
)

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
GOOD = f"00-{TRACE}-{PARENT}-01"


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (GOOD, GOOD),
        (f"00-{TRACE}-{PARENT}-00", f"00-{TRACE}-{PARENT}-00"),  # not sampled: kept so
        (f" \t{GOOD} ", GOOD),  # optional whitespace around
        (f"01-{TRACE}-{PARENT}-01-future-fields", GOOD),  # a later version: written as 00
        (f"{GOOD}\r\nX-Injected: 1", ""),  # CR/LF: the header injection of issue 47
        (f"{GOOD}\r\n", ""),
        (f"{GOOD}\n", ""),
        (f"\r\n{GOOD}", ""),
        (f"00-{TRACE}-{PARENT}-01-more", ""),  # version 00 has exactly four fields
        (f"ff-{TRACE}-{PARENT}-01", ""),  # version ff is invalid
        (f"00-{'0' * 32}-{PARENT}-01", ""),  # all-zero trace id
        (f"00-{TRACE}-{'0' * 16}-01", ""),  # all-zero parent id
        (f"00-{TRACE.upper()}-{PARENT}-01", ""),  # lowercase hex only
        (f"00-{TRACE}-{PARENT}-0g", ""),
        (f"00-{TRACE[:-1]}-{PARENT}-01", ""),
        ("", ""),
        ("garbage", ""),
    ],
)
def test_a_traceparent_is_written_anew_or_dropped(value: str, written: str) -> None:
    assert normalized_traceparent(value) == written
    parsed = parse_traceparent(value)
    assert (parsed is not None) == bool(written)
    if parsed is not None:
        assert (parsed.trace_id, parsed.parent_id) == (int(TRACE, 16), int(PARENT, 16))


def test_a_tracestate_keeps_its_valid_members_in_order() -> None:
    assert normalized_tracestate("congo=t61rcWkgMzE, rojo=00f067aa0ba902b7") == (
        "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
    )
    assert normalized_tracestate("a=1,,\tb=2 ,") == "a=1,b=2"  # empty members dropped
    assert normalized_tracestate("tenant@vendor=1") == "tenant@vendor=1"
    assert normalized_tracestate("") == ""


@pytest.mark.parametrize(
    "value",
    [
        "Upper=1",  # keys are lowercase
        "a=1,a=2",  # each key once
        "a=1\r\nX-Injected: 1",  # a line break is no list member
        "a=1,b",  # no '='
        "a=x,y=",  # an empty value
        "a=1=2",  # '=' in a value
        ",".join(f"k{n}=v" for n in range(33)),  # at most 32 members
    ],
)
def test_an_invalid_tracestate_is_dropped_whole(value: str) -> None:
    assert normalized_tracestate(value) == ""


def test_a_long_tracestate_loses_large_members_then_members_from_the_end() -> None:
    small = [f"s{n}={'x' * 60}" for n in range(6)]  # 63 characters each
    large = f"big={'y' * 200}"
    # Over 512 with the large member; without it, 6 x 63 + 5 = 383: only the large one goes.
    assert normalized_tracestate(",".join([small[0], large, *small[1:]])) == ",".join(small)
    # All small, over 512: members go from the end until it fits (8 x 63 + 7 = 511).
    many = [f"m{n}={'x' * 60}" for n in range(10)]
    assert normalized_tracestate(",".join(many)) == ",".join(many[:8])
    # Exactly 512 is kept as it is.
    exact = ",".join([*many[:7], f"z={'x' * 62}"])
    assert len(exact) == MAX_TRACESTATE_CHARS
    assert normalized_tracestate(exact) == exact
    # The issue's: 32 members of 259 characters (8,319): the first alone fits.
    huge = [f"k{n:02d}={'v' * 255}" for n in range(32)]
    assert normalized_tracestate(",".join(huge)) == huge[0]


def test_a_carrier_needs_a_valid_traceparent() -> None:
    assert normalized_carrier({"traceparent": GOOD, "tracestate": "a=1 "}) == {
        "traceparent": GOOD,
        "tracestate": "a=1",
    }
    assert normalized_carrier({"traceparent": GOOD, "tracestate": "A=1"}) == {"traceparent": GOOD}
    assert normalized_carrier({"traceparent": f"{GOOD}\r\n", "tracestate": "a=1"}) == {}
    assert normalized_carrier({"tracestate": "a=1"}) == {}


def system(**values: str) -> dict[str, object]:
    return {
        "SystemProperties": [
            {"Name": name, "Type": "STRING", "Value": value} for name, value in values.items()
        ]
    }


def test_a_messages_creation_context_is_written_anew_or_dropped() -> None:
    assert trace_context(system(traceparent=f" {GOOD}", tracestate="a=1")) == {
        "traceparent": GOOD,
        "tracestate": "a=1",
    }
    assert trace_context(system(traceparent=f"{GOOD}\r\nX-Injected: 1")) == {}
    assert trace_context(system(tracestate="a=1")) == {}


def test_a_publishers_invalid_traceparent_is_kept_as_sent_but_never_used() -> None:
    # The client's properties come back as it sent them (docs/protocol.md#message-properties);
    # the gateway adds no context of its own beside the publisher's.
    mine = system(traceparent=f"{GOOD}\r\n")
    assert with_trace_context(mine, {"traceparent": GOOD}) == mine
    assert trace_context(mine) == {}


def test_what_the_gateway_adds_is_within_the_limits() -> None:
    huge = ",".join(f"k{n:02d}={'v' * 255}" for n in range(32))
    added = with_trace_context({}, {"traceparent": GOOD, "tracestate": huge})
    assert added == system(traceparent=GOOD, tracestate=huge[:259])
