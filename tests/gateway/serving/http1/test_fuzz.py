"""Fuzzing the raw HTTP surface of a real ``mns-gateway serve`` on 127.0.0.1.

Three kinds of requests, each over its own socket:

* **garbage**: request lines, headers, framing and bodies drawn at random, unsigned;
* **hostile**: correctly signed and framed MNS operations on existing queues and topics with one
  thing wrong that a lenient reader would take (an integer in other digits, an unreadable XML
  encoding, an undocumented method, an empty path segment...), sent whole or in random chunks;
* **smuggling**: a signed request whose framing is ambiguous or malformed, with a second signed
  request (DeleteQueue) hidden where a lenient reader would see the next request.

Whatever is sent: every answer is an MNS XML error whose status is its code's status, or (for
unsigned garbage only) a health probe's 2xx; never a 5xx, a redirect or HTML. The connection is
closed after a refusal and usable after any other answer. And afterwards the queues, topics,
subscriptions and messages created before are exactly as they were.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from xml.etree.ElementTree import ParseError

import pytest
from defusedxml.ElementTree import fromstring
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors.mns import ERROR_TABLE
from tests.conftest import RunningGateway, start_gateway
from tests.fuzz import count, fuzz_settings
from tests.gateway.serving.http1.fuzz_requests import (
    BAD_CHUNKS,
    FRAMINGS,
    QUEUE,
    SUBSCRIPTION,
    TOPIC,
    garbage,
    hostile,
    signed_request,
)
from tests.http_wire import read_bodiless_response, read_responses
from tests.mns_http import RawClient, RawResponse

pytestmark = pytest.mark.fuzz

HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: fuzz\r\n\r\n"
PUBLIC_BODIES = (b"ok\n", b"ready\n")


# the gateway and what it holds --------------------------------------------------------------
@pytest.fixture(scope="module", params=["gevent", "gthread"])
def gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    env = {
        "MNS_GATEWAY_WORKER_CLASS": request.param,
        "MNS_GATEWAY_DELIVERY_THREADS": "0",
        "MNS_GATEWAY_MAX_BODY_BYTES": "65536",
    }
    running = start_gateway(Path(tmp_path_factory.mktemp("fuzz")), env)
    raw = running.raw()
    assert (
        raw.send(
            "PUT", f"/queues/{QUEUE}", b"<Queue><VisibilityTimeout>600</VisibilityTimeout></Queue>"
        ).status
        == 201
    )
    for body in ("one", "two", "three"):
        message = f"<Message><MessageBody>{body}</MessageBody></Message>".encode()
        assert raw.send("POST", f"/queues/{QUEUE}/messages", message).status == 201
    assert raw.send("PUT", f"/topics/{TOPIC}", b"<Topic/>").status == 201
    subscription = b"<Subscription><Endpoint>http://127.0.0.1:9/fz</Endpoint></Subscription>"
    assert (
        raw.send("PUT", f"/topics/{TOPIC}/subscriptions/{SUBSCRIPTION}", subscription).status == 201
    )
    message = b"<Message><MessageBody>published</MessageBody></Message>"
    assert raw.send("POST", f"/topics/{TOPIC}/messages", message).status == 201
    yield running
    running.stop()


def store_state(raw: RawClient) -> list[tuple[int, bytes]]:
    """Everything the fixtures created, as read through the API (reads change nothing)."""
    reads = [
        "/queues",
        f"/queues/{QUEUE}",
        f"/queues/{QUEUE}/messages?peekonly=true&numOfMessages=16",
        "/topics",
        f"/topics/{TOPIC}",
        f"/topics/{TOPIC}/subscriptions",
        f"/topics/{TOPIC}/subscriptions/{SUBSCRIPTION}",
    ]
    return [(r.status, r.body) for r in (raw.send("GET", uri) for uri in reads)]


@pytest.fixture(autouse=True)
def store_is_intact(gateway: RunningGateway) -> Iterator[None]:
    before = store_state(gateway.raw())
    yield
    assert store_state(gateway.raw()) == before


def suite(gateway: RunningGateway, kind: str) -> str:
    """The tally's name for ``kind`` of requests sent to ``gateway``."""
    return f"gateway {kind} ({gateway.env['MNS_GATEWAY_WORKER_CLASS']} worker class)"


# checking answers ---------------------------------------------------------------------------
def assert_mns_error(response: RawResponse, suite: str) -> None:
    """A 4xx MNS ``<Error>`` whose status is the one its code always travels with."""
    assert 400 <= response.status < 500, (response.status, response.body[:300])
    assert response.headers.get("content-type", "").startswith("text/xml"), response.headers
    assert "x-mns-request-id" in response.headers
    if not response.body:  # the answer to a HEAD
        count(suite, f"{response.status} (no body: HEAD)")
        return
    try:
        root = fromstring(response.body)
    except ParseError as exc:  # pragma: no cover - the failure message is the point
        raise AssertionError(f"not XML: {response.body[:300]!r}") from exc
    code = next((child.text for child in root if child.tag.endswith("Code")), None)
    assert root.tag.endswith("Error") and code in ERROR_TABLE, response.body[:300]
    assert ERROR_TABLE[code][0] == response.status, (code, response.status)
    count(suite, f"{response.status} {code}")


def assert_batch_failed(response: RawResponse, suite: str) -> None:
    """BatchSendMessage's documented answer when messages fail alone: 500 with an ErrorCode
    entry in each failed message's place (docs/queues.md#batch-partial-failures). The one 5xx
    MNS clients expect; here every message failed, so none may have been stored."""
    root = fromstring(response.body)
    entries = [child for child in root if child.tag.endswith("Message")]
    assert response.status == 500 and root.tag.endswith("Messages") and entries
    for entry in entries:
        codes = [field.text for field in entry if field.tag.endswith("ErrorCode")]
        assert codes and codes[0] in ERROR_TABLE and ERROR_TABLE[codes[0]][0] == 400, codes
    count(suite, f"500 BatchSendMessage, every message {codes[0]} (the MNS wire format)")


def exchange(
    gateway: RunningGateway, data: bytes, *, then_healthz: bool
) -> tuple[list[RawResponse], bool]:
    """Send ``data`` and read the answers: with ``then_healthz`` (its framing is sound) a health
    probe follows on the same connection and the two answers are read; otherwise the sending
    side is closed and everything is read until the gateway closes too."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        try:
            sock.sendall(data + (HEALTHZ if then_healthz else b""))
            if not then_healthz:
                sock.shutdown(socket.SHUT_WR)  # the end of what we send: no waiting on timeouts
        except OSError:  # the gateway refused and closed while we were still sending
            pass
        return read_responses(sock, count=2 if then_healthz else None, timeout=15)


def exchange_head(gateway: RunningGateway, data: bytes) -> RawResponse:
    """A HEAD request's answer (no body to frame it, so it is read until the gateway closes)."""
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        response, rest = read_bodiless_response(sock, timeout=15)
    assert response is not None and rest == b"", rest[:200]
    return response


def check_refused_and_closed(responses: list[RawResponse], closed: bool, suite: str) -> None:
    """A refusal: at most one answer, an MNS error saying ``Connection: close``, then EOF."""
    assert closed, "the connection was left open after a refusal"
    assert len(responses) <= 1, [r.status for r in responses]
    for response in responses:
        assert_mns_error(response, suite)
        assert response.headers.get("connection") == "close"
    if not responses:
        count(suite, "closed without an answer")


# garbage ----------------------------------------------------------------------------------------
@fuzz_settings(1500)
@given(data=garbage())
def test_garbage_is_answered_with_mns_errors_or_closed(
    gateway: RunningGateway, data: bytes
) -> None:
    count(suite(gateway, "garbage"), "sent")
    responses, closed = exchange(gateway, data, then_healthz=False)
    assert closed, "the gateway neither answered nor closed"
    for response in responses:
        if 200 <= response.status < 300:  # only the unauthenticated probes answer unsigned
            assert response.body in PUBLIC_BODIES or response.body.startswith(b"# HELP")
            count(suite(gateway, "garbage"), f"{response.status} (health probe)")
        else:
            assert_mns_error(response, suite(gateway, "garbage"))
    if not responses:
        count(suite(gateway, "garbage"), "closed without an answer")


# hostile, correctly signed requests --------------------------------------------------------------
@fuzz_settings(1000)
@given(request=hostile(), chunks=st.one_of(st.none(), st.lists(st.integers(0, 200), max_size=5)))
def test_hostile_signed_requests_are_refused_and_the_connection_stays_usable(
    gateway: RunningGateway, request: tuple[str, str, bytes], chunks: list[int] | None
) -> None:
    method, uri, body = request
    count(suite(gateway, "hostile"), "sent")
    data = signed_request(gateway.raw(), method, uri, body, chunks=chunks)
    if method == "HEAD":
        assert_mns_error(exchange_head(gateway, data), suite(gateway, "hostile"))
        return
    responses, _ = exchange(gateway, data, then_healthz=True)
    assert [r.status for r in responses][1:] == [200], [r.status for r in responses]
    if body.startswith(b"<Messages>") and responses[0].status == 500:
        assert_batch_failed(responses[0], suite(gateway, "hostile"))
    else:
        assert_mns_error(responses[0], suite(gateway, "hostile"))
    assert responses[1].body == b"ok\n"  # the probe after it was read as a request of its own


# smuggling --------------------------------------------------------------------------------------
@fuzz_settings(300)
@given(
    framing=st.sampled_from(FRAMINGS),
    chunked_junk=st.sampled_from([None, *BAD_CHUNKS]),
    version=st.sampled_from(["HTTP/1.1", "HTTP/1.0"]),
)
def test_ambiguous_framing_never_smuggles_a_request(
    gateway: RunningGateway, framing: str, chunked_junk: bytes | None, version: str
) -> None:
    count(suite(gateway, "smuggling"), "sent")
    raw = gateway.raw()
    hidden = signed_request(raw, "DELETE", f"/queues/{QUEUE}", b"", chunks=None)
    uri = f"/topics/{TOPIC}/messages"
    headers = "\r\n".join(f"{k}: {v}" for k, v in raw.headers_for("POST", uri, b"").items())
    body = (chunked_junk or b"0\r\n\r\n") + hidden
    head = (
        f"POST {uri} {version}\r\nHost: fuzz\r\n{headers}\r\n{framing.format(n=len(body))}\r\n\r\n"
    )
    responses, closed = exchange(gateway, head.encode() + body, then_healthz=False)
    check_refused_and_closed(responses, closed, suite(gateway, "smuggling"))
