"""Connection limits: which connection gives way when a worker is full (pure), and a real gateway
flooded with idle and slow connections, which must keep answering its health probes."""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.serving.http1.connections import ConnectionTable
from tests.conftest import RunningGateway, start_gateway
from tests.http_wire import read_responses

SLOW_HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-slow: "
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


# the table --------------------------------------------------------------------------------------
class Closed(list[str]):
    def closer(self, name: str):  # type: ignore[no-untyped-def]
        return lambda: self.append(name)


def test_a_full_table_gives_up_the_connection_waiting_longest() -> None:
    closed = Closed()
    table = ConnectionTable(2)
    first = table.admit(closed.closer("first"))
    table.admit(closed.closer("second"))
    assert first is not None
    first.serving()
    first.waiting()  # served, and waiting again from now: now the youngest
    assert table.admit(closed.closer("third")) is not None
    assert closed == ["second"]
    assert len(table) == 2 and table.given_up == 1


def test_connections_being_served_are_never_given_up() -> None:
    closed = Closed()
    table = ConnectionTable(2)
    for name in ("a", "b"):
        slot = table.admit(closed.closer(name))
        assert slot is not None
        slot.serving()
    assert table.admit(closed.closer("c")) is None
    assert closed == [] and table.turned_away == 1


def test_a_released_slot_is_free_again() -> None:
    table = ConnectionTable(1)
    slot = table.admit(lambda: None)
    assert slot is not None
    slot.serving()
    slot.release()
    assert table.admit(lambda: None) is not None and table.given_up == 0


def test_draining_closes_idle_connections_now_and_the_others_when_next_idle() -> None:
    closed = Closed()
    table = ConnectionTable(4)
    idle, reading, served = (table.admit(closed.closer(n)) for n in ("idle", "reading", "served"))
    assert idle is not None and reading is not None and served is not None
    idle.waiting(idle=True)  # kept alive between two requests
    reading.waiting()  # accepted, or part of a request read: not idle
    served.serving()
    table.drain()
    assert closed == ["idle"] and len(table) == 2
    served.waiting(idle=True)  # its response written: it would idle now
    assert closed == ["idle", "served"] and table.draining


def test_bytes_of_a_next_request_make_a_connection_no_longer_idle() -> None:
    closed = Closed()
    table = ConnectionTable(2)
    slot = table.admit(closed.closer("kept"))
    assert slot is not None
    slot.waiting(idle=True)
    slot.idle = False  # what the handler does when the next request's first bytes arrive
    table.drain()
    assert closed == []


def test_a_request_arrived_but_not_yet_read_is_answered_not_dropped_by_a_drain() -> None:
    """The handler may not have run since the next request's bytes arrived (a loaded machine):
    draining then leaves the connection to its handler, which answers and closes it."""
    closed = Closed()
    table = ConnectionTable(2)
    arrived = table.admit(closed.closer("arrived"), has_input=lambda: True)
    quiet = table.admit(closed.closer("quiet"), has_input=lambda: False)
    assert arrived is not None and quiet is not None
    arrived.waiting(idle=True)
    quiet.waiting(idle=True)
    table.drain()
    assert closed == ["quiet"]


# a real gateway ---------------------------------------------------------------------------------
def raise_open_file_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))


def probe(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(HEALTHZ)
        [response], _ = read_responses(sock, count=1, timeout=10)
    return response.status


@pytest.fixture()
def gateway(tmp_path: Path) -> Iterator[RunningGateway]:
    running = start_gateway(tmp_path / "data", {"MNS_GATEWAY_HEADER_TIMEOUT": "60"})
    yield running
    running.stop()


def test_more_slow_and_idle_connections_than_gunicorns_thousand_leave_probes_answered(
    gateway: RunningGateway,
) -> None:
    raise_open_file_limit(4096)
    sockets: list[socket.socket] = []
    try:
        for i in range(1200):
            sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=10)
            sockets.append(sock)
            sock.sendall(SLOW_HEAD if i % 2 else HEALTHZ)
        assert [probe(gateway.port) for _ in range(3)] == [200, 200, 200]
    finally:
        for sock in sockets:
            sock.close()


@pytest.fixture()
def small_gateway(tmp_path: Path) -> Iterator[RunningGateway]:
    env = {
        "MNS_GATEWAY_MAX_CONNECTIONS": "20",
        "MNS_GATEWAY_MAX_WAITERS": "20",  # sized from the cap, it would leave room for one
        "MNS_GATEWAY_HEADER_TIMEOUT": "60",
    }
    running = start_gateway(tmp_path / "data", env)
    yield running
    running.stop()


def test_a_full_worker_closes_the_longest_waiting_connection_for_a_new_one(
    small_gateway: RunningGateway,
) -> None:
    port = small_gateway.port
    slow = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(60)]
    for sock in slow:
        sock.sendall(SLOW_HEAD)
        time.sleep(0.005)  # an order of arrival to give up in
    try:
        assert probe(port) == 200
        oldest, newest = slow[:20], slow[-10:]
        assert all(read_responses(sock, timeout=5)[1] for sock in oldest)  # closed, unanswered
        for sock in newest:  # still held: they get their answer once the head is complete
            sock.sendall(b"1\r\n\r\n")
            assert read_responses(sock, count=1, timeout=5)[0][0].status == 200
    finally:
        for sock in slow:
            sock.close()


def test_a_worker_whose_connections_are_all_busy_turns_a_newcomer_away_cleanly(
    small_gateway: RunningGateway,
) -> None:
    raw = small_gateway.raw()
    assert raw.send("PUT", "/queues/empty", b"<Queue/>").status == 201
    uri = "/queues/empty/messages?waitseconds=5"
    polls = []
    for _ in range(20):  # long polls: connections being served, never given up
        sock = socket.create_connection(("127.0.0.1", small_gateway.port), timeout=10)
        head = [f"GET {uri} HTTP/1.1", "Host: x"]
        head += [f"{k}: {v}" for k, v in raw.headers_for("GET", uri, b"").items()]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        polls.append(sock)
    time.sleep(0.5)
    try:
        with socket.create_connection(("127.0.0.1", small_gateway.port), timeout=10) as sock:
            sock.sendall(HEALTHZ)
            responses, closed = read_responses(sock, timeout=5)
        assert [(r.status, r.error_code()) for r in responses] == [(503, "TooManyConnections")]
        assert closed
        for sock in polls:  # and the long polls end as they should
            assert read_responses(sock, count=1, timeout=10)[0][0].error_code() == "MessageNotExist"
    finally:
        for sock in polls:
            sock.close()
