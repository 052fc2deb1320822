"""Wake-ups between processes: real unix datagram sockets in a temporary directory."""

from __future__ import annotations

import queue
import socket
from pathlib import Path

import pytest

from gateway.store.notify.notifier import decode_queue_wakeup, encode_queue_wakeup
from gateway.store.notify.socket_notifier import SocketNotifier


@pytest.fixture()
def wake_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(tmp_path_factory.mktemp("w")) / "wake"


class Collector:
    """A :class:`~gateway.store.notify.notifier.WakeListener` that records what reaches it."""

    def __init__(self) -> None:
        self.received: queue.Queue[tuple[str, int | None] | str] = queue.Queue()

    def queue_ready(self, queue_name: str, count: int | None) -> None:
        self.received.put((queue_name, count))

    def deliveries_due(self) -> None:
        self.received.put("deliveries")

    def get(self) -> tuple[str, int | None] | str:
        return self.received.get(timeout=10)


def test_wakeups_encode_and_hostile_ones_are_dropped() -> None:
    assert decode_queue_wakeup(encode_queue_wakeup("q-1", 3).encode()) == ("q-1", 3)
    assert decode_queue_wakeup(encode_queue_wakeup("q", None)) == ("q", None)
    for bad in (b"", b"q", b"q q x", b"q  3", b"\xff\xfe 1", b"q q -1", b"x q 1", b"d"):
        assert decode_queue_wakeup(bad) is None


def test_a_broadcast_reaches_every_other_process_but_not_itself(wake_dir: Path) -> None:
    got_a, got_b = Collector(), Collector()
    a, b = SocketNotifier(wake_dir), SocketNotifier(wake_dir)
    try:
        assert a.start(got_a) and b.start(got_b)
        a.queue_ready("orders", 2)
        assert got_b.get() == ("orders", 2)
        b.queue_ready("orders", None)
        assert got_a.get() == ("orders", None)
        a.deliveries_due()
        assert got_b.get() == "deliveries"
        assert got_a.received.empty() and got_b.received.empty()
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
    sender = SocketNotifier(wake_dir)
    sender.queue_ready("q", 1)
    assert not stale.exists()
    sender.close()


def test_a_sender_needs_no_socket_of_its_own(wake_dir: Path) -> None:
    got = Collector()
    listener = SocketNotifier(wake_dir)
    listener.listen(got)
    sender = SocketNotifier(wake_dir)
    try:
        sender.queue_ready("q", 1)
        assert got.get() == ("q", 1)
    finally:
        sender.close()
        listener.close()


def test_too_long_a_path_turns_cross_process_wakeups_off(tmp_path: Path) -> None:
    notifier = SocketNotifier(tmp_path / ("x" * 120))
    assert notifier.start(Collector()) is False
    notifier.queue_ready("q", 1)  # harmless
    notifier.close()


def test_broadcast_without_a_directory_is_harmless(tmp_path: Path) -> None:
    notifier = SocketNotifier(tmp_path / "missing")
    notifier.deliveries_due()
    notifier.close()


GEVENT_FULL_PEER = """
import socket, sys
from gevent import monkey
monkey.patch_all()
import gevent
from pathlib import Path
from gateway.store.notify.socket_notifier import SocketNotifier

directory = Path(sys.argv[1])
directory.mkdir()
peer = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
peer.bind(str(directory / "1-full.sock"))  # bound, never read: its buffer fills up
notifier = SocketNotifier(directory)

def sender():
    for _ in range(5000):
        notifier.queue_ready("q", 1)

gevent.joinall([gevent.spawn(sender) for _ in range(4)], raise_error=True, timeout=20)
print("ok")
"""


def test_a_full_peer_neither_blocks_nor_fails_senders_on_greenlets(tmp_path: Path) -> None:
    """Under gevent, sends to a peer whose buffer is full are dropped at once, whichever
    greenlet makes them (gevent would otherwise wait on the socket, and two greenlets waiting
    on one socket is an error that reached clients as a 500)."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", GEVENT_FULL_PEER, str(tmp_path / "wake")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
