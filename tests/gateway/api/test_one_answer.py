"""One answer for an error on every front end (issue 33 finding 13), over a real
``mns-gateway serve`` and raw sockets: a request refused before it is authenticated carries one
request id, the same in ``x-mns-request-id`` and in the body; a JSON API request is refused in
JSON whatever refuses it; the control plane's ``HostId`` is never the raw Host header."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator

import pytest

from tests.conftest import RunningGateway, start_gateway
from tests.http_wire import read_message

JSON_HEADERS = b"x-mns-version: 2026-04-09\r\nContent-Type: application/json\r\n"


def _exchange(port: int, request: bytes) -> tuple[dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        head, body = read_message(sock)
    lines = head.decode("latin-1").split("\r\n")
    headers = {"status": lines[0]}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers, body


REFUSED_EARLY = {
    "connect": b"CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "double-slash": b"GET //queues HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "large-header": b"GET /queues HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
    + b"a" * 70_000
    + b"\r\n\r\n",
    "bad-content-length": b"POST /queues/q/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Length: 12x\r\n\r\n",
    "unsigned": b"GET /queues HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
}


@pytest.mark.parametrize("name", REFUSED_EARLY)
def test_a_refused_request_has_one_request_id(gateway_process: RunningGateway, name: str) -> None:
    headers, body = _exchange(gateway_process.port, REFUSED_EARLY[name])
    assert not headers["status"].split()[1].startswith("5"), headers["status"]
    in_body = re.search(rb"<RequestId>([^<]+)</RequestId>", body)
    assert in_body is not None, body
    assert headers["x-mns-request-id"] == in_body.group(1).decode()


@pytest.fixture(scope="module", params=["gevent", "gthread"])
def small_bodies(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    data_dir = tmp_path_factory.mktemp(f"one-answer-{request.param}")
    env = {"MNS_GATEWAY_WORKER_CLASS": request.param, "MNS_GATEWAY_MAX_BODY_BYTES": "4096"}
    running = start_gateway(data_dir, env)
    yield running
    running.stop()


OVERSIZED = {
    "declared": b"Content-Length: 100000000\r\n\r\n",
    "chunked": b"Transfer-Encoding: chunked\r\n\r\n2000\r\n" + b"x" * 0x2000 + b"\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("framing", OVERSIZED)
def test_an_oversized_json_request_is_refused_in_json(
    small_bodies: RunningGateway, framing: str
) -> None:
    request = (
        b"POST /queues/q/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + JSON_HEADERS
        + OVERSIZED[framing]
    )
    headers, body = _exchange(small_bodies.port, request)
    assert headers["x-mns-version"] == "2026-04-09"
    assert headers["content-type"].startswith("application/json")
    document = json.loads(body)
    assert document["Code"] == "InvalidArgument"
    assert document["RequestId"] == headers["x-mns-request-id"]


def test_control_plane_errors_never_echo_the_raw_host(gateway_process: RunningGateway) -> None:
    hostile = b'evil.example"><script>x</script>'
    request = (
        b"POST /?Action=ListQueue&Version=2022-01-19 HTTP/1.1\r\nHost: " + hostile + b"\r\n"
        b"Content-Length: 0\r\n\r\n"
    )
    headers, body = _exchange(gateway_process.port, request)
    document = json.loads(body)
    assert document["Code"] != "InternalError"
    assert "script" not in document["HostId"] and "evil" not in document["HostId"]
    assert document["RequestId"] == headers["x-acs-request-id"]
