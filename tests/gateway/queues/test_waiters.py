"""The per-process waiter hub and the long-poll loop, with real threads and no sleeps to wait."""

from __future__ import annotations

import threading

from gateway.queues.waiters import WaiterHub, long_poll


class Ticker:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_hub_admits_at_most_max_waiters() -> None:
    hub = WaiterHub(max_waiters=2)
    with hub.register("a") as first, hub.register("b") as second, hub.register("a") as third:
        assert first is not None and second is not None and third is None
        assert hub.waiting == 2
    assert hub.waiting == 0
    with hub.register("a") as again:
        assert again is not None


def test_a_notify_before_sleeping_is_not_lost() -> None:
    hub = WaiterHub()
    with hub.register("q") as waiter:
        assert waiter is not None
        seen = waiter.generation()
        hub.notify("q", 1)  # arrives between the look at the queue and the sleep
        assert waiter.sleep(seen, timeout=30) is True


def test_sleep_without_notify_times_out_unchanged() -> None:
    hub = WaiterHub()
    with hub.register("q") as waiter:
        assert waiter is not None
        hub.notify("other")
        assert waiter.sleep(waiter.generation(), timeout=0.01) is False


def test_notify_wakes_a_sleeping_thread() -> None:
    hub = WaiterHub()
    woke: list[bool] = []
    registered = threading.Event()

    def sleeper() -> None:
        with hub.register("q") as waiter:
            assert waiter is not None
            seen = waiter.generation()
            registered.set()
            woke.append(waiter.sleep(seen, timeout=60))

    thread = threading.Thread(target=sleeper)
    thread.start()
    assert registered.wait(10)
    hub.notify("q")
    thread.join(timeout=10)
    assert woke == [True]


def test_notify_without_waiters_is_a_no_op() -> None:
    hub = WaiterHub()
    hub.notify("nobody", 3)
    assert hub.waiting == 0


def test_long_poll_returns_the_first_result() -> None:
    hub = WaiterHub()
    clock = Ticker()
    answers = iter([(None, 0.0), (None, None), (["m"], None)])
    calls: list[int] = []

    def attempt() -> tuple[list[str] | None, float | None]:
        calls.append(1)
        hub.notify("q")  # something changed: look again at once
        return next(answers)

    with hub.register("q") as waiter:
        assert waiter is not None
        assert long_poll(waiter, attempt, deadline=10, monotonic=clock) == ["m"]
    assert len(calls) == 3


def test_long_poll_gives_up_at_the_deadline() -> None:
    hub = WaiterHub()
    clock = Ticker()

    def attempt() -> tuple[list[str] | None, float | None]:
        clock.now += 4
        return None, None

    with hub.register("q") as waiter:
        assert waiter is not None
        result = long_poll(waiter, attempt, deadline=10, monotonic=clock, recheck_seconds=0.001)
    assert result is None
    assert clock.now == 12  # looked at 4, 8 and 12 s
