"""A route's slots: at most ``size`` holders at once; a waiter gets the slot given back."""

from __future__ import annotations

import threading

from gateway.pushing.pools import Slots


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
