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
from urllib.parse import quote
from xml.etree.ElementTree import ParseError

import pytest
from defusedxml.ElementTree import fromstring
from hypothesis import given
from hypothesis import strategies as st

from gateway.protocol.errors import ERROR_TABLE
from tests.conftest import RunningGateway, start_gateway
from tests.fuzz import count, fuzz_settings
from tests.http_wire import read_bodiless_response, read_responses
from tests.mns_http import RawClient, RawResponse

pytestmark = pytest.mark.fuzz

QUEUE, TOPIC, SUBSCRIPTION = "fz-q", "fz-t", "fz-s"
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
#: No HEAD: its answer has no body to frame it, so it could not be told from what follows (the
#: hostile requests send HEAD alone on a connection).
TOKENS = st.sampled_from(
    [
        "GET",
        "POST",
        "PUT",
        "DELETE",
        "OPTIONS",
        "PATCH",
        "CONNECT",
        "TRACE",
        "PRI",
        "G ET",
        "get",
        "MNS",
        "",
    ]
)
TARGETS = st.one_of(
    st.sampled_from(
        [
            "/",
            "/healthz",
            "/readyz",
            "/metrics",
            "/queues",
            f"/queues/{QUEUE}/messages",
            f"/topics/{TOPIC}",
            "*",
            "http://x/queues",
            "//queues",
            "/queues//messages",
            "/%00",
            "/a b",
            "/\xff",
        ]
    ),
    st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=40).map(
        lambda t: "/" + t
    ),
)
VERSIONS = st.sampled_from(
    ["HTTP/1.1", "HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/0.9", "HTTP/1.1 ", "HTTP/1", ""]
)
HEADER_NAMES = st.sampled_from(
    [
        "Host",
        "Content-Length",
        "Transfer-Encoding",
        "Content-Type",
        "Connection",
        "Expect",
        "Authorization",
        "Date",
        "x-mns-version",
        "Content-MD5",
        "X_Under",
        "X Space",
        "",
        "Upgrade",
    ]
)
HEADER_VALUES = st.one_of(
    st.sampled_from(
        [
            "x",
            "0",
            "5",
            "1_0",
            "+5",
            "-1",
            "chunked",
            "gzip",
            "chunked, chunked",
            "close",
            "keep-alive",
            "100-continue",
            "MNS a:b",
            "h2c",
            "\u0663".encode().decode("latin-1"),
        ]
    ),
    st.binary(max_size=30).map(lambda b: b.decode("latin-1")),
)


@st.composite
def garbage(draw: st.DrawFn) -> bytes:
    if draw(st.booleans()) and draw(st.booleans()):
        return draw(st.binary(min_size=1, max_size=200))
    line = f"{draw(TOKENS)} {draw(TARGETS)} {draw(VERSIONS)}"
    headers = draw(st.lists(st.tuples(HEADER_NAMES, HEADER_VALUES), max_size=6))
    if draw(st.booleans()):
        headers.insert(0, ("Host", "fuzz"))
    head = "\r\n".join([line, *(f"{name}: {value}" for name, value in headers)])
    ending = draw(st.sampled_from(["\r\n\r\n", "\r\n\r\n", "\n\n", "\r\n", ""]))
    body = draw(
        st.one_of(
            st.just(b""),
            st.binary(max_size=100),
            st.sampled_from(
                [b"0\r\n\r\n", b"5\r\nhello\r\n0\r\n\r\n", b"zz\r\n", b"FFFFFFFFFFFFFFFFFF\r\n"]
            ),
        )
    )
    return (head + ending).encode("latin-1") + body


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


# hostile, correctly signed requests ------------------------------------------------------------
#: What Python's int() takes for a number and MNS does not, and what is not a number at all.
LENIENT_INTEGERS = [
    "1_0",
    "+3",
    "\u0663",
    "\uff13",
    "\uff11\uff10",
    "-1",
    "0x10",
    "1e3",
    "3.0",
    "1 0",
    "",
    "99999999999999999999",
    "\u00b2",
    "\u2163",
]
QUEUE_ATTRIBUTES = [
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "VisibilityTimeout",
    "PollingWaitSeconds",
]
ENCODINGS = [
    "bogus",
    "rot13",
    "utf-32",
    "shift_jis",
    "idna",
    "undefined",
    "zlib",
    "hex",
    "x-user-defined",
    "utf-7",
    "base64",
    "a" * 300,
]


@st.composite
def hostile(draw: st.DrawFn) -> tuple[str, str, bytes]:
    """(method, uri, body) of a signed operation that the gateway must refuse."""
    number = draw(st.sampled_from(LENIENT_INTEGERS))
    encoding = draw(st.sampled_from(ENCODINGS))
    declared = f'<?xml version="1.0" encoding="{encoding}"?>'
    attribute = draw(st.sampled_from(QUEUE_ATTRIBUTES))
    choices = [
        (
            "PUT",
            f"/queues/{QUEUE}?metaoverride=true",
            f"<Queue><{attribute}>{number}</{attribute}></Queue>",
        ),
        ("PUT", "/queues/fz-new", f"<Queue><{attribute}>{number}</{attribute}></Queue>"),
        (
            "POST",
            f"/queues/{QUEUE}/messages",
            f"<Message><MessageBody>x</MessageBody><DelaySeconds>{number}</DelaySeconds></Message>",
        ),
        (
            "POST",
            f"/queues/{QUEUE}/messages",
            f"<Message><MessageBody>x</MessageBody><Priority>{number}</Priority></Message>",
        ),
        (
            "POST",
            f"/queues/{QUEUE}/messages",
            f"<Messages><Message><MessageBody>x</MessageBody><DelaySeconds>{number}</DelaySeconds></Message></Messages>",
        ),
        ("GET", f"/queues/{QUEUE}/messages?numOfMessages={quote(number)}", ""),
        ("GET", f"/queues/{QUEUE}/messages?waitseconds={quote(number)}", ""),
        ("PUT", f"/queues/{QUEUE}/messages?ReceiptHandle=x&VisibilityTimeout={quote(number)}", ""),
        (
            "PUT",
            "/topics/fz-new",
            f"<Topic><MaximumMessageSize>{number}</MaximumMessageSize></Topic>",
        ),
        (
            "PUT",
            f"/queues/{QUEUE}?metaoverride=true",
            f"{declared}<Queue><DelaySeconds>1</DelaySeconds></Queue>",
        ),
        ("PUT", "/queues/fz-new", f"{declared}<Queue/>"),
        (
            "POST",
            f"/queues/{QUEUE}/messages",
            f"{declared}<Message><MessageBody>x</MessageBody></Message>",
        ),
        (
            "POST",
            f"/topics/{TOPIC}/messages",
            f"{declared}<Message><MessageBody>x</MessageBody></Message>",
        ),
        (
            "PUT",
            f"/topics/{TOPIC}/subscriptions/fz-new",
            f"{declared}<Subscription><Endpoint>http://127.0.0.1:9/</Endpoint></Subscription>",
        ),
        (
            "DELETE",
            f"/queues/{QUEUE}/messages",
            f"{declared}<ReceiptHandles><ReceiptHandle>x</ReceiptHandle></ReceiptHandles>",
        ),
        (
            "POST",
            f"/topics/{TOPIC}/messages",
            "<Message><MessageBody>x</MessageBody><MessageAttributes><DirectMail>"
            + "[" * 5000
            + "]" * 5000
            + "</DirectMail></MessageAttributes></Message>",
        ),
        (
            "POST",
            f"/topics/{TOPIC}/messages",
            '<?xml version="1.0" encoding="utf-8" standalone="maybe"?><Message/>',
        ),
        ("PUT", "/topics/fz-new", '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "b">]><Topic/>'),
    ]
    method, uri, body = draw(st.sampled_from(choices))
    if draw(st.integers(0, 3)) == 0:  # an undocumented method on a real path instead
        method = draw(st.sampled_from(["HEAD", "OPTIONS", "PATCH", "TRACE", "PROPFIND", "PURGE"]))
        uri = draw(
            st.sampled_from(
                [
                    f"/queues/{QUEUE}/messages",
                    f"/queues/{QUEUE}",
                    f"/topics/{TOPIC}",
                    "/queues",
                    "/admin/dead-letters",
                ]
            )
        )
    elif draw(st.integers(0, 4)) == 0:  # or an empty path segment in a destructive request
        method, body = "DELETE", ""
        uri = draw(
            st.sampled_from(
                [
                    f"//queues/{QUEUE}",
                    f"/queues//{QUEUE}",
                    f"/topics/{TOPIC}//subscriptions/{SUBSCRIPTION}",
                    f"/queues/{QUEUE}//messages",
                ]
            )
        )
    return method, uri, body.encode()


def signed_request(
    raw: RawClient, method: str, uri: str, body: bytes, *, chunks: list[int] | None
) -> bytes:
    headers = raw.headers_for(method, uri, body)
    lines = [f"{method} {uri} HTTP/1.1", "Host: fuzz", *(f"{k}: {v}" for k, v in headers.items())]
    if chunks is None:
        lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body
    lines.append("Transfer-Encoding: chunked")
    encoded, start = b"", 0
    for end in sorted({min(point, len(body)) for point in chunks} | {len(body)}):
        if end > start:
            encoded += b"%x\r\n%s\r\n" % (end - start, body[start:end])
            start = end
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + encoded + b"0\r\n\r\n"


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


# smuggling ---------------------------------------------------------------------------------------
FRAMINGS = [
    "Content-Length: {n}\r\nTransfer-Encoding: chunked",
    "Transfer-Encoding: chunked\r\nContent-Length: {n}",
    "Content-Length: {n}\r\nContent-Length: 0",
    "Content-Length: 0\r\nContent-Length: {n}",
    "Content-Length: {n}, 0",
    "Content-Length: +{n}",
    "Content-Length: {n}_0",
    "Content-Length: \u0661{n}",
    "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity",
    "Transfer-Encoding: gzip, chunked\r\nContent-Length: {n}",
    "Transfer-Encoding: xchunked",
    "Transfer-Encoding: chunked, gzip",
    "Transfer-Encoding:\tchunked\r\nContent-Length: {n}",
    "Transfer-Encoding : chunked",
    "Transfer-Encoding: chunked\r\n Content-Length: {n}",
]
BAD_CHUNKS = [
    b"zz\r\n",
    b"-0\r\n",
    b"0x5\r\n",
    b"FFFFFFFFFFFFFFFFFFFF\r\n",
    b"5 \r\n",
    b"5\n",
    b"\r\n",
]


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
