"""A route's slots (at most ``size`` holders at once; a waiter gets the slot given back) and its
idle keep-alive sockets."""

from __future__ import annotations

import socket
import threading

from gateway.pushing.pools import OriginPool, Slots


def test_no_more_than_size_holders() -> None:
    slots = Slots(2)
    assert slots.acquire(timeout=0)
    assert slots.acquire(timeout=0)
    assert not slots.acquire(timeout=0)
    assert not slots.acquire(timeout=-1)  # a deadline already past: no wait, no error
    slots.release()
    assert slots.acquire(timeout=0)


def test_a_waiter_takes_the_slot_given_back() -> None:
    slots = Slots(1)
    assert slots.acquire(timeout=0)
    waiting, taken = threading.Event(), []

    def wait_for_slot() -> None:
        waiting.set()
        taken.append(slots.acquire(timeout=5))

    thread = threading.Thread(target=wait_for_slot)
    thread.start()
    assert waiting.wait(5)
    slots.release()
    thread.join(5)
    assert taken == [True]
    assert not slots.acquire(timeout=0)


def test_the_pool_gives_back_the_latest_idle_socket_and_skips_dropped_ones() -> None:
    pool = OriginPool(2)
    (first, first_peer), (second, second_peer) = socket.socketpair(), socket.socketpair()
    pool.give_back(first)
    pool.give_back(second)
    second_peer.close()  # the peer hung up on the most recent one: it is not reused
    assert pool.take_idle() is first
    assert second.fileno() == -1  # closed, not handed out
    assert pool.take_idle() is None
    first.close()
    first_peer.close()


def test_a_socket_given_back_to_a_closed_pool_is_closed() -> None:
    pool = OriginPool(1)
    (idle, idle_peer), (busy, busy_peer) = socket.socketpair(), socket.socketpair()
    pool.give_back(idle)
    pool.close()
    assert idle.fileno() == -1
    pool.give_back(busy)  # it was in use while the pool closed
    assert busy.fileno() == -1
    assert pool.take_idle() is None
    idle_peer.close()
    busy_peer.close()
