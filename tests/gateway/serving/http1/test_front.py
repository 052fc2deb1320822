"""The attack campaign's framing requests against a real ``mns-gateway serve``, with each worker
class: every one answered 400 with an MNS error, the connection closed, and nothing after the
bad framing run as a request."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RunningGateway, start_gateway
from tests.http_wire import is_closed, read_responses
from tests.mns_http import RawClient, RawResponse

WORKER_CLASSES = ["gevent", "gthread"]
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.fixture(scope="module", params=WORKER_CLASSES)
def gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    data_dir = tmp_path_factory.mktemp(f"front-{request.param}")
    env = {
        "MNS_GATEWAY_WORKER_CLASS": request.param,
        "MNS_GATEWAY_MAX_BODY_BYTES": "4096",
        "MNS_GATEWAY_HEADER_TIMEOUT": "2",
    }
    running = start_gateway(Path(data_dir), env)
    yield running
    running.stop()


def exchange(gateway: RunningGateway, data: bytes) -> tuple[list[RawResponse], bool]:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        sock.sendall(data)
        return read_responses(sock, timeout=5)


def assert_refused(gateway: RunningGateway, data: bytes, code: str = "MalformedRequest") -> None:
    responses, closed = exchange(gateway, data)
    assert [(r.status, r.error_code()) for r in responses] == [(400, code)], responses
    assert responses[0].headers["content-type"].startswith("text/xml")
    assert responses[0].headers.get("connection") == "close"
    assert closed


def test_content_length_beside_chunked_does_not_smuggle_a_request(gateway: RunningGateway) -> None:
    assert_refused(
        gateway,
        b"POST /topics/t/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 39\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + HEALTHZ,
    )


@pytest.mark.parametrize(
    "lengths",
    [b"Content-Length: 3\r\nContent-Length: 4", b"Content-Length: 1_0", b"Content-Length: +61",
     b"Content-Length: -1", b"Content-Length: 3, 3"],
    ids=["two-lengths", "underscore", "plus", "negative", "list"],
)  # fmt: skip
def test_a_content_length_is_one_number(gateway: RunningGateway, lengths: bytes) -> None:
    assert_refused(
        gateway,
        b"POST /queues/q/messages HTTP/1.1\r\nHost: x\r\n"
        + lengths
        + b"\r\n\r\n0123456789"
        + HEALTHZ,
    )


@pytest.mark.parametrize(
    "chunks",
    [b"zz\r\nabc\r\n0\r\n\r\n", b"-5\r\nabc\r\n0\r\n\r\n",
     b"FFFFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n", b"3\r\nabcX0\r\n\r\n"],
    ids=["non-hex", "negative", "huge", "no-crlf"],
)  # fmt: skip
def test_malformed_chunks_are_400_before_authentication(
    gateway: RunningGateway, chunks: bytes
) -> None:
    head = b"POST /topics/t/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    responses, closed = exchange(gateway, head + chunks + HEALTHZ)
    assert closed
    if gateway.env["MNS_GATEWAY_WORKER_CLASS"] == "gthread" and chunks.startswith(b"FFFF"):
        # gunicorn takes any number of hex digits for a size and waits for that much data;
        # the stalled read ends the connection after MNS_GATEWAY_HEADER_TIMEOUT.
        assert responses == []
        return
    assert [r.status for r in responses] == [400]
    assert responses[0].error_code() in ("MalformedRequest", "InvalidRequestURL")


def test_an_unknown_transfer_coding_is_400(gateway: RunningGateway) -> None:
    responses, closed = exchange(
        gateway, b"POST /queues HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc"
    )
    assert [r.status for r in responses] == [400] and closed  # gunicorn alone would say 501


def test_a_chunked_body_is_read_whole(gateway: RunningGateway, tmp_path: Path) -> None:
    raw = RawClient("127.0.0.1", gateway.port, "test-key-id", "test-key-secret")
    body = b"<Queue><VisibilityTimeout>5</VisibilityTimeout></Queue>"
    assert raw.send("PUT", f"/queues/chunked-{gateway.port}", body, chunked=True).status == 201
    response = raw.send("GET", f"/queues/chunked-{gateway.port}")
    assert b"<VisibilityTimeout>5</VisibilityTimeout>" in response.body


def test_a_chunked_body_over_the_limit_is_refused(gateway: RunningGateway) -> None:
    head = b"POST /topics/t/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    responses, _ = exchange(gateway, head + b"1000\r\n" + b"x" * 4096 + b"\r\n1\r\nx\r\n0\r\n\r\n")
    assert [(r.status, r.error_code()) for r in responses] == [(400, "InvalidArgument")]


def test_requests_on_one_connection_are_answered_in_order(gateway: RunningGateway) -> None:
    readyz = b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        sock.sendall(HEALTHZ + readyz + HEALTHZ)
        responses, _ = read_responses(sock, count=3)
        assert [r.body for r in responses] == [b"ok\n", b"ready\n", b"ok\n"]
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        responses, closed = read_responses(sock)
    assert [r.status for r in responses] == [200] and closed


def test_expect_100_continue_is_honoured(gateway: RunningGateway) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        sock.sendall(
            b"POST /queues/q/messages HTTP/1.1\r\nHost: x\r\n"
            b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n"
        )
        assert sock.recv(1024).startswith(b"HTTP/1.1 100 Continue\r\n")
        sock.sendall(b"hello")
        responses, _ = read_responses(sock, count=1)
    assert responses[0].error_code() == "MissingAuthorizationHeader"


def test_a_long_head_is_refused(gateway: RunningGateway) -> None:
    responses, closed = exchange(
        gateway, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"
    )
    assert [r.status for r in responses] in ([431], [400]) and closed
    assert responses[0].headers["content-type"].startswith("text/xml")


def test_nothing_reads_past_a_refusal(gateway: RunningGateway) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        sock.sendall(b"GET /queues HTTP/1.1\r\nHost: x\r\nContent-Length: 1_0\r\n\r\n")
        responses, _ = read_responses(sock, count=1)
        assert responses[0].status == 400
        try:
            sock.sendall(HEALTHZ)
        except OSError:
            return
        assert is_closed(sock)


def test_a_head_stalled_behind_a_pipelined_request_has_its_deadline(
    gateway: RunningGateway,
) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        sock.sendall(HEALTHZ + b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-slow: ")
        started = time.monotonic()
        responses, closed = read_responses(sock, timeout=10)
    assert closed and time.monotonic() - started < 8  # MNS_GATEWAY_HEADER_TIMEOUT=2, not 75
    assert responses[0].status == 200
    if gateway.env["MNS_GATEWAY_WORKER_CLASS"] == "gevent":  # gthread closes without a word
        assert [(r.status, r.error_code()) for r in responses[1:]] == [(408, "RequestTimeout")]


def test_a_client_that_asks_to_close_is_told_the_server_will(gateway: RunningGateway) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        responses, closed = read_responses(sock)
    assert [r.status for r in responses] == [200] and closed
    assert responses[0].headers.get("connection") == "close"
