"""Wake-ups between processes: real unix datagram sockets in a temporary directory."""

from __future__ import annotations

import queue
import socket
from pathlib import Path

import pytest

from gateway.queues.wake_socket import Deliver, WakeChannel, decode_wakeup, encode_wakeup


@pytest.fixture()
def wake_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(tmp_path_factory.mktemp("w")) / "wake"


def collector() -> tuple[queue.Queue[tuple[str, int | None]], Deliver]:
    received: queue.Queue[tuple[str, int | None]] = queue.Queue()
    return received, lambda name, count: received.put((name, count))


def test_wakeups_encode_and_hostile_ones_are_dropped() -> None:
    assert decode_wakeup(encode_wakeup("q-1", 3)) == ("q-1", 3)
    assert decode_wakeup(encode_wakeup("q", None)) == ("q", None)
    for bad in (b"", b"q", b"q x", b" 3", b"\xff\xfe 1", b"q -1"):
        assert decode_wakeup(bad) is None


def test_a_broadcast_reaches_every_other_process_but_not_itself(wake_dir: Path) -> None:
    got_a, deliver_a = collector()
    got_b, deliver_b = collector()
    a, b = WakeChannel(wake_dir, deliver_a), WakeChannel(wake_dir, deliver_b)
    try:
        assert a.start() and b.start()
        a.broadcast("orders", 2)
        assert got_b.get(timeout=10) == ("orders", 2)
        b.broadcast("orders", None)
        assert got_a.get(timeout=10) == ("orders", None)
        assert got_a.empty() and got_b.empty()
    finally:
        a.close()
        b.close()
    assert list(wake_dir.iterdir()) == []


def test_a_dead_processs_socket_is_removed(wake_dir: Path) -> None:
    wake_dir.mkdir(parents=True)
    stale = wake_dir / "999999-dead.sock"
    orphan = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    orphan.bind(str(stale))
    orphan.close()  # the file stays, nobody listens: like a SIGKILLed worker
    sender = WakeChannel(wake_dir, lambda name, count: None)
    sender.broadcast("q", 1)
    assert not stale.exists()
    sender.close()


def test_a_sender_needs_no_socket_of_its_own(wake_dir: Path) -> None:
    got, deliver = collector()
    listener = WakeChannel(wake_dir, deliver)
    listener.start()
    sender = WakeChannel(wake_dir, lambda name, count: None)
    try:
        sender.broadcast("q", 1)
        assert got.get(timeout=10) == ("q", 1)
    finally:
        sender.close()
        listener.close()


def test_too_long_a_path_turns_cross_process_wakeups_off(tmp_path: Path) -> None:
    channel = WakeChannel(tmp_path / ("x" * 120), lambda name, count: None)
    assert channel.start() is False
    channel.broadcast("q", 1)  # harmless
    channel.close()


def test_broadcast_without_a_directory_is_harmless(tmp_path: Path) -> None:
    channel = WakeChannel(tmp_path / "missing", lambda name, count: None)
    channel.broadcast("q", None)
    channel.close()
