"""A message is never handed to a client that is gone: receivers that disconnect at every point
of a (long-polling) ReceiveMessage, against a real gateway; and the receive undone, through
WSGI, when its response cannot be written."""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from werkzeug.test import EnvironBuilder

from gateway.api.app import create_app
from gateway.auth.signatures import IncomingRequest, sign, string_to_sign
from gateway.config.settings import Settings
from gateway.queues.records import NewMessage, QueueAttributes
from gateway.serving.http1.environ import CLIENT_CONNECTED
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import Store, compose_store
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway, start_gateway
from tests.http_wire import read_responses
from tests.mns_http import RawClient, RawResponse

QUEUE_XML = b"<Queue><VisibilityTimeout>600</VisibilityTimeout></Queue>"


def element(response: RawResponse, name: str) -> list[str]:
    return re.findall(rf"<{name}>([^<]*)</{name}>", response.body.decode())


def counts(raw: RawClient, queue: str) -> tuple[int, int]:
    """(ActiveMessages, InactiveMessages)."""
    response = raw.send("GET", f"/queues/{queue}")
    return int(element(response, "ActiveMessages")[0]), int(
        element(response, "InactiveMessages")[0]
    )


def send(raw: RawClient, queue: str, body: str) -> None:
    message = f"<Message><MessageBody>{body}</MessageBody></Message>".encode()
    assert raw.send("POST", f"/queues/{queue}/messages", message).status == 201


def receive_request(raw: RawClient, queue: str, query: str = "waitseconds=20") -> bytes:
    uri = f"/queues/{queue}/messages?{query}"
    headers = raw.headers_for("GET", uri, b"")
    lines = [f"GET {uri} HTTP/1.1", f"Host: 127.0.0.1:{raw.port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connect(raw: RawClient) -> socket.socket:
    return socket.create_connection((raw.host, raw.port), timeout=10)


def reset(sock: socket.socket) -> None:
    """Close with a TCP reset rather than a FIN, as a killed client does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def until(condition: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


@pytest.fixture()
def queue(raw: RawClient, unique: str) -> str:
    assert raw.send("PUT", f"/queues/{unique}", QUEUE_XML).status == 201
    return unique


def assert_received_once_by_a_live_client(raw: RawClient, queue: str, bodies: list[str]) -> None:
    """Every message is Active and goes, at once, to the first client that is really there."""
    assert counts(raw, queue) == (len(bodies), 0)
    live = raw.send("GET", f"/queues/{queue}/messages?numOfMessages=16&waitseconds=1")
    assert sorted(element(live, "MessageBody")) == sorted(bodies)
    assert set(element(live, "DequeueCount")) == {"1"}


# disconnecting at every point -------------------------------------------------------------------
def test_halfway_through_the_request(raw: RawClient, queue: str) -> None:
    sock = connect(raw)
    sock.sendall(receive_request(raw, queue)[:40])
    sock.close()
    send(raw, queue, "m")
    assert_received_once_by_a_live_client(raw, queue, ["m"])


@pytest.mark.parametrize("close", [socket.socket.close, reset], ids=["fin", "reset"])
def test_while_the_poll_waits(
    raw: RawClient, queue: str, close: Callable[[socket.socket], None]
) -> None:
    sock = connect(raw)
    sock.sendall(receive_request(raw, queue))
    time.sleep(0.5)  # the poll is asleep on the empty queue
    close(sock)
    time.sleep(0.2)
    send(raw, queue, "m")
    assert_received_once_by_a_live_client(raw, queue, ["m"])


def test_right_after_sending_the_request(raw: RawClient, queue: str) -> None:
    send(raw, queue, "waiting")
    sock = connect(raw)
    sock.sendall(receive_request(raw, queue, "waitseconds=0"))
    sock.shutdown(socket.SHUT_WR)  # gone, as far as the gateway can tell, once the FIN is in
    answer = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):  # until the gateway closes its side
            answer += chunk
    sock.close()
    if b"<MessageBody>waiting</MessageBody>" in answer:
        # The gateway answered before the FIN reached it (a loaded machine can run it between
        # the client's two calls): the message went to a client that read it, as any receive.
        assert counts(raw, queue) == (0, 1)
        return
    # It saw the FIN first: whether before or after its claim, nothing stays taken.
    until(lambda: counts(raw, queue) == (1, 0))
    assert_received_once_by_a_live_client(raw, queue, ["waiting"])


def test_ten_abandoned_long_polls_take_nothing(raw: RawClient, queue: str) -> None:
    sockets = [connect(raw) for _ in range(10)]
    for sock in sockets:
        sock.sendall(receive_request(raw, queue))
    time.sleep(0.5)
    for sock in sockets:
        sock.close()
    time.sleep(0.2)
    bodies = [f"m{i}" for i in range(10)]
    for body in bodies:
        send(raw, queue, body)
    assert_received_once_by_a_live_client(raw, queue, bodies)


def test_a_client_that_stays_gets_its_message(raw: RawClient, queue: str) -> None:
    sock = connect(raw)
    sock.sendall(receive_request(raw, queue))
    time.sleep(0.3)
    send(raw, queue, "for you")
    [answer], _ = read_responses(sock, count=1)
    sock.close()
    assert b"<MessageBody>for you</MessageBody>" in answer.body
    assert counts(raw, queue) == (0, 1)


@pytest.fixture()
def few_waiters(tmp_path: Path) -> Iterator[RunningGateway]:
    gateway = start_gateway(tmp_path / "data", {"MNS_GATEWAY_MAX_WAITERS": "3"})
    yield gateway
    gateway.stop()


def test_abandoned_polls_give_their_waiter_slots_back(few_waiters: RunningGateway) -> None:
    raw = few_waiters.raw()
    assert raw.send("PUT", "/queues/q", QUEUE_XML).status == 201
    sockets = [connect(raw) for _ in range(3)]
    for sock in sockets:
        sock.sendall(receive_request(raw, "q"))
    time.sleep(0.5)
    for sock in sockets:
        sock.close()
    time.sleep(1.5)  # each abandoned poll notices within its 1 s recheck
    live = connect(raw)
    live.sendall(receive_request(raw, "q", "waitseconds=10"))
    time.sleep(0.3)
    send(raw, "q", "late")
    [answer], _ = read_responses(live, count=1)
    live.close()
    assert b"<MessageBody>late</MessageBody>" in answer.body


# the receive undone when its response is not written ----------------------------------------
@pytest.fixture()
def app_and_store(tmp_path: Path) -> Iterator[tuple[Callable[..., object], Store]]:
    store = compose_store(SQLiteDatabase(tmp_path / "db.sqlite3"))
    app = create_app(Settings(data_dir=tmp_path), store, {ACCESS_KEY_ID: ACCESS_KEY_SECRET})
    store.queues.create_queue("q", QueueAttributes(visibility_timeout=600))
    store.queues.send("q", [NewMessage("m")])
    yield app, store
    store.close()


def signed(method: str, uri: str, body: bytes = b"") -> dict[str, str]:
    from email.utils import formatdate

    headers = {"Date": formatdate(usegmt=True), "x-mns-version": "2015-06-06"}
    request = IncomingRequest.from_pairs(method, uri, headers.items(), body)
    signature = sign(ACCESS_KEY_SECRET, string_to_sign(request))
    headers["Authorization"] = f"MNS {ACCESS_KEY_ID}:{signature}"
    return headers


def receive_through_wsgi(app: Callable[..., object], connected: Callable[[], bool]) -> object:
    uri = "/queues/q/messages"
    environ = EnvironBuilder(path=uri, headers=signed("GET", uri)).get_environ()
    environ[CLIENT_CONNECTED] = connected
    return app(environ, lambda status, headers, exc_info=None: None)  # type: ignore[operator]


def message_state(store: Store) -> tuple[int, int]:
    _, counted = store.queues.get_queue("q")
    return counted.active, counted.inactive


def test_a_response_the_server_could_not_write_hands_the_message_back(
    app_and_store: tuple[Callable[..., object], Store],
) -> None:
    app, store = app_and_store
    body = receive_through_wsgi(app, lambda: True)
    assert message_state(store) == (0, 1)
    body.close()  # type: ignore[attr-defined]  # what a server does when writing failed
    assert message_state(store) == (1, 0)
    [message] = store.queues.receive("q", 1, 0).messages
    assert message.dequeue_count == 1  # the undone receive is not counted


def test_a_client_gone_before_the_response_is_written_gets_nothing(
    app_and_store: tuple[Callable[..., object], Store],
) -> None:
    app, store = app_and_store
    answers = iter([True, False])  # connected for the claim, gone when the response is ready
    body = receive_through_wsgi(app, lambda: next(answers))
    assert b"".join(body) == b""  # type: ignore[call-overload]
    body.close()  # type: ignore[attr-defined]
    assert message_state(store) == (1, 0)


def test_a_written_response_keeps_the_message_received(
    app_and_store: tuple[Callable[..., object], Store],
) -> None:
    app, store = app_and_store
    body = receive_through_wsgi(app, lambda: True)
    assert b"<MessageBody>m</MessageBody>" in b"".join(body)  # type: ignore[call-overload]
    body.close()  # type: ignore[attr-defined]
    assert message_state(store) == (0, 1)
