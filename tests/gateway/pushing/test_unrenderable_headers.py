"""Every header of a push goes through one checked path (issue 47): the trace headers are
checked with the MNS headers (:func:`gateway.delivery.formats.push_headers`), so a push that
cannot be rendered fails its message permanently, is never sent, and is never counted against
its endpoint; a publisher's traceparent is written anew before it becomes a header."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from gateway.breaker.state import counts_as_failure
from gateway.delivery.records import DeliveryJob
from gateway.errors import PermanentDeliveryError
from gateway.observability.tracing import CREATION_HEADER, NoTracing
from gateway.pushing.keyring import KeyRing
from gateway.pushing.senders import HttpSender
from gateway.pushing.transport import PushTransport
from gateway.testing import PushRecorder
from gateway.topics.records import Subscription, TopicMessage
from tests.support.pushes import raw_pushes

GOOD = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class FixedTracing(NoTracing):
    """Tracing on, whose current span's context is ``carrier`` as given: a stand-in for a
    tracer that hands out a header value no request may carry."""

    enabled = True

    def __init__(self, carrier: Mapping[str, str]) -> None:
        self.carrier = dict(carrier)

    def current_carrier(self) -> dict[str, str]:
        return dict(self.carrier)


@pytest.fixture()
def endpoint() -> Iterator[PushRecorder]:
    with raw_pushes() as recorder:
        yield recorder


def sender(tmp_path: Path, transport: PushTransport, carrier: Mapping[str, str]) -> HttpSender:
    return HttpSender(
        transport,
        KeyRing(tmp_path / "keys", bits=1024),
        public_url="http://127.0.0.1",
        account_id="1234567890",
        timeout=2,
        tracing=FixedTracing(carrier),
    )


def job(url: str, traceparent: str | None = None) -> DeliveryJob:
    attributes = (
        {"SystemProperties": [{"Name": "traceparent", "Type": "STRING", "Value": traceparent}]}
        if traceparent is not None
        else {}
    )
    message = TopicMessage("M1", "t", "body", "X", 0, attributes=attributes)
    return DeliveryJob("d1", 0, message, Subscription("t", "s", url), route=url)


@pytest.mark.parametrize(
    "carrier",
    [
        {"traceparent": f"{GOOD}\r\nX-Injected: 1"},
        {"traceparent": GOOD, "tracestate": "a=1\nb=2"},
        {"traceparent": GOOD, "bad\r\nname": "1"},
    ],
)
def test_a_trace_header_that_cannot_be_sent_fails_the_message_not_the_endpoint(
    tmp_path: Path, endpoint: PushRecorder, carrier: dict[str, str]
) -> None:
    refused = pytest.raises(PermanentDeliveryError, match="cannot render the push")
    with PushTransport() as transport, refused:
        sender(tmp_path, transport, carrier).send(job(endpoint.url))
    assert endpoint.received == []  # nothing was sent
    # What the worker records for it ("rejected") the breaker does not count.
    assert counts_as_failure("rejected", None) is None


def test_a_publishers_traceparent_is_written_anew_or_left_out(
    tmp_path: Path, endpoint: PushRecorder
) -> None:
    with PushTransport() as transport:
        pushing = sender(tmp_path, transport, {"traceparent": GOOD})
        for creation in (f"{GOOD}\r\nX-Injected: 1", f" {GOOD}"):
            assert pushing.send(job(endpoint.url, creation)).ok
    injected, spaced = endpoint.wait_for(2)
    assert CREATION_HEADER not in injected.headers and "x-injected" not in injected.headers
    assert spaced.headers[CREATION_HEADER] == GOOD
    assert spaced.headers["traceparent"] == GOOD  # the attempt's, after the signed headers
