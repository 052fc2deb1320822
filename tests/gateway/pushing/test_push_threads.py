"""The push threads: every submitted item is worked on once, a failing item does not stop its
thread, and a shutdown drops what has not begun."""

from __future__ import annotations

import threading

import pytest

from gateway.pushing.push_threads import PushThreads


def test_every_item_is_worked_on_once() -> None:
    seen: list[int] = []
    lock = threading.Lock()
    done = threading.Semaphore(0)

    def work(item: int) -> None:
        with lock:
            seen.append(item)
        done.release()

    threads = PushThreads(4, work)
    for item in range(100):
        threads.submit(item)
    for _ in range(100):
        assert done.acquire(timeout=5)
    threads.shutdown()
    assert threads.join(5)
    assert sorted(seen) == list(range(100))


def test_an_item_that_raises_leaves_its_thread_working(caplog: pytest.LogCaptureFixture) -> None:
    done = threading.Event()

    def work(item: str) -> None:
        if item == "bad":
            raise RuntimeError("boom")
        done.set()

    threads = PushThreads(1, work)  # one thread: the second item needs the same one
    threads.submit("bad")
    threads.submit("good")
    assert done.wait(5)
    threads.shutdown()
    assert "a push thread's work failed" in caplog.text


def test_shutdown_drops_what_has_not_begun() -> None:
    started, release = threading.Event(), threading.Event()
    worked: list[str] = []

    def work(item: str) -> None:
        worked.append(item)
        started.set()
        release.wait(5)

    threads = PushThreads(1, work)
    threads.submit("first")
    assert started.wait(5)
    threads.submit("waiting")
    threads.shutdown()
    release.set()
    threads.submit("after")
    assert threads.join(5)
    assert worked == ["first"]


def test_a_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="count must be >= 1"):
        PushThreads(0, lambda item: None)


def test_threads_are_started_with_the_items_up_to_count() -> None:
    done = threading.Semaphore(0)
    threads = PushThreads(3, lambda item: done.release(), name="grow-test")

    def named() -> int:
        return sum(thread.name.startswith("grow-test_") for thread in threading.enumerate())

    assert named() == 0
    threads.submit(1)
    assert done.acquire(timeout=5)
    assert named() == 1
    for item in range(10):
        threads.submit(item)
    for _ in range(10):
        assert done.acquire(timeout=5)
    assert named() == 3
    threads.shutdown()
    assert threads.join(5)
    assert named() == 0
