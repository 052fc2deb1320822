"""The default gunicorn worker class: gevent's WSGI server with an idle timeout.

Run the way an operator runs it under their own gunicorn, with a one-second keep-alive so the
timeouts are observable.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from gunicorn.config import Config

from gateway.serving.pywsgi_worker import ONE_WRITE_BYTES, FramedHandler
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    free_port,
    wait_until_ready,
)
from tests.http_wire import read_message

HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
#: gunicorn 26 and later open a control socket at a fixed path unless told not to (several
#: gunicorns may run at once here); earlier versions have none and refuse the flag.
NO_CONTROL_SOCKET = (
    ("--no-control-socket",) if "control_socket_disable" in Config().settings else ()
)


@pytest.fixture(scope="module")
def access_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pywsgi-log") / "access.log"


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory, access_log: Path) -> Iterator[int]:
    port = free_port()
    env = {
        **os.environ,
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        "MNS_GATEWAY_DATA_DIR": str(tmp_path_factory.mktemp("pywsgi")),
        "MNS_GATEWAY_HEADER_TIMEOUT": "1",
    }
    command = [
        *(sys.executable, "-m", "gunicorn", "-k", "gateway.serving.pywsgi_worker.PyWSGIWorker"),
        *("--keep-alive", "1", "-b", f"127.0.0.1:{port}", *NO_CONTROL_SOCKET),
        *("--access-logfile", str(access_log)),
        "gateway.serving.wsgi:app",
    ]
    process = subprocess.Popen(
        command,
        env=env,
        cwd=Path(__file__).resolve().parents[3],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_ready(port, process)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_until_closed(sock: socket.socket, seconds: float) -> tuple[float, bytes]:
    """Seconds until the server closed the connection, and what it sent before."""
    started, received = time.monotonic(), b""
    sock.settimeout(seconds)
    while chunk := sock.recv(65536):
        received += chunk
    return time.monotonic() - started, received


def test_a_kept_alive_connection_serves_several_requests(port: int) -> None:
    with connect(port) as sock:
        for _ in range(3):
            sock.sendall(HEALTHZ)
            assert read_message(sock)[0].startswith(b"HTTP/1.1 200")


def test_an_idle_kept_alive_connection_is_closed_after_keepalive(port: int) -> None:
    with connect(port) as sock:
        sock.sendall(HEALTHZ)
        read_message(sock)[0]
        assert read_until_closed(sock, seconds=10)[0] < 5


def test_a_request_that_stops_halfway_is_answered_408_and_closed(port: int) -> None:
    with connect(port) as sock:
        sock.sendall(b"POST /topics/t/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Len")
        seconds, answer = read_until_closed(sock, seconds=10)
    assert seconds < 5  # MNS_GATEWAY_HEADER_TIMEOUT=1
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"<Code>RequestTimeout</Code>" in answer


def test_a_head_trickled_a_byte_at_a_time_still_has_one_deadline(port: int) -> None:
    with connect(port) as sock:
        started = time.monotonic()
        for (
            byte
        ) in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-slow: aaaaaaaaaaaaaaaaaaaaaaaaaa":
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.1)
        _, answer = read_until_closed(sock, seconds=10)
    assert time.monotonic() - started < 5
    assert answer.startswith(b"HTTP/1.1 408")


def test_a_connection_that_sends_nothing_is_closed_quietly(port: int) -> None:
    with connect(port) as sock:
        seconds, answer = read_until_closed(sock, seconds=10)
    assert seconds < 5 and answer == b""


def test_responses_keep_the_mns_header_spelling(port: int) -> None:
    with connect(port) as sock:
        sock.sendall(b"GET /topics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = read_message(sock)[0]
    assert head.startswith(b"HTTP/1.1 4")  # unsigned: an MNS error
    assert b"\r\nx-mns-request-id: " in head
    assert b"\r\nx-mns-version: 2015-06-06" in head


def test_a_configured_access_log_is_written(port: int, access_log: Path) -> None:
    with connect(port) as sock:
        sock.sendall(b"GET /healthz?marker=access-log HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        read_message(sock)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "marker=access-log" not in access_log.read_text():
        time.sleep(0.05)
    assert "GET /healthz?marker=access-log" in access_log.read_text()


class _Writes:
    """A server-side socket that records each write the handler asks of it."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.writes: list[int] = []

    def send(self, data: bytes) -> int:
        sent = self._sock.send(data)
        self.writes.append(sent)
        return sent

    def sendall(self, data: bytes) -> None:
        self._sock.sendall(data)
        self.writes.append(len(data))

    def __getattr__(self, name: str) -> object:
        return getattr(self._sock, name)


def _serve_one(body: bytes, *, sized: bool = True) -> tuple[list[int], bytes]:
    """One request through :class:`FramedHandler` on a socket pair, answered with ``body``
    (``sized``: with its Content-Length, else as a generator, which gevent sends chunked): the
    sizes of the writes made, and the response as the client read it."""

    def app(environ: dict[str, object], start_response: Callable[..., object]) -> Iterable[bytes]:
        if not sized:
            start_response("201 Created", [])
            return (part for part in [body])
        start_response("201 Created", [("Content-Length", str(len(body)))])
        return [body]

    server_end, client_end = socket.socketpair()
    recorded = _Writes(server_end)
    server = SimpleNamespace(
        application=app,
        environ={"SERVER_NAME": "test", "SERVER_PORT": "0"},
        log=SimpleNamespace(access_log_enabled=False),
    )
    with client_end:
        client_end.sendall(b"GET /x HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        FramedHandler(recorded, ("127.0.0.1", 1), server).handle()
        client_end.settimeout(10)
        response = b""
        while chunk := client_end.recv(1 << 20):
            response += chunk
    return recorded.writes, response


def test_a_small_response_is_written_with_its_head_in_one_system_call() -> None:
    writes, response = _serve_one(b"<Message/>")
    assert response.startswith(b"HTTP/1.1 201 Created\r\n")
    assert response.endswith(b"\r\n\r\n<Message/>")
    assert writes == [len(response)]


def test_a_large_response_body_is_not_copied_behind_its_head() -> None:
    body = b"x" * (ONE_WRITE_BYTES + 1)
    writes, response = _serve_one(body)
    assert response.endswith(b"\r\n\r\n" + body)
    assert writes[0] == len(response) - len(body)  # the head alone, then the body
    assert sum(writes) == len(response)


def test_a_body_without_a_length_is_sent_chunked_after_its_head() -> None:
    _, response = _serve_one(b"<Message/>", sized=False)
    head, _, body = response.partition(b"\r\n\r\n")
    assert b"\r\nTransfer-Encoding: chunked" in head
    assert body == b"a\r\n<Message/>\r\n0\r\n\r\n"
