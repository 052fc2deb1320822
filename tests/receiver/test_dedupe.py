"""Opt-in deduplication: once per message id and subscription within the window."""

from __future__ import annotations

import threading

import pytest
from flask import Flask

from receiver import DedupeStore, InMemoryDedupeStore, Notification
from receiver.testing import SigningIdentity, post_notification, sign_notification
from tests.support.clock import Clock

from .conftest import AppFactory, Recorder


@pytest.fixture
def deduped(make_app: AppFactory, recorder: Recorder) -> Flask:
    app, receiver = make_app(dedupe=True)
    receiver.handler()(recorder)
    return app


def deliver(app: Flask, identity: SigningIdentity, clock: Clock, **options: object) -> int:
    signed = sign_notification(identity, date=clock.now, **options)  # type: ignore[arg-type]
    return post_notification(app.test_client(), signed).status_code


def test_a_redelivered_message_runs_the_handler_once(
    deduped: Flask, recorder: Recorder, identity: SigningIdentity, clock: Clock
) -> None:
    assert deliver(deduped, identity, clock, message_id="m-1") == 204
    assert deliver(deduped, identity, clock, message_id="m-1") == 204  # acknowledged again
    assert [n.message_id for n in recorder.received] == ["m-1"]


def test_the_same_message_for_another_subscription_runs_again(
    deduped: Flask, recorder: Recorder, identity: SigningIdentity, clock: Clock
) -> None:
    assert deliver(deduped, identity, clock, message_id="m-1", subscription_name="a") == 204
    assert deliver(deduped, identity, clock, message_id="m-1", subscription_name="b") == 204
    assert [n.subscription_name for n in recorder.received] == ["a", "b"]


def test_the_window_ends_by_the_injected_clock(
    deduped: Flask, recorder: Recorder, identity: SigningIdentity, clock: Clock
) -> None:
    deliver(deduped, identity, clock, message_id="m-1")
    clock.advance(3599)
    deliver(deduped, identity, clock, message_id="m-1")
    assert len(recorder.received) == 1
    clock.advance(2)
    deliver(deduped, identity, clock, message_id="m-1")
    assert len(recorder.received) == 2


def test_a_failed_handler_does_not_count_as_seen(
    make_app: AppFactory, identity: SigningIdentity, clock: Clock
) -> None:
    app, receiver = make_app(dedupe=True)
    attempts: list[str] = []

    @receiver.handler()
    def flaky(notification: Notification) -> None:
        attempts.append(notification.message_id)
        if len(attempts) == 1:
            raise RuntimeError("first attempt fails")

    assert deliver(app, identity, clock, message_id="m-1") == 500
    assert deliver(app, identity, clock, message_id="m-1") == 204
    assert deliver(app, identity, clock, message_id="m-1") == 204
    assert attempts == ["m-1", "m-1"]


def test_forged_pushes_do_not_poison_the_store(
    deduped: Flask, recorder: Recorder, identity: SigningIdentity, impostor: SigningIdentity,
    clock: Clock,
) -> None:  # fmt: skip
    assert deliver(deduped, impostor, clock, message_id="m-1") == 403
    assert deliver(deduped, identity, clock, message_id="m-1") == 204
    assert len(recorder.received) == 1


def test_without_dedupe_every_delivery_runs(
    make_app: AppFactory, recorder: Recorder, identity: SigningIdentity, clock: Clock
) -> None:
    app, receiver = make_app()
    receiver.handler()(recorder)
    deliver(app, identity, clock, message_id="m-1")
    deliver(app, identity, clock, message_id="m-1")
    assert len(recorder.received) == 2


class SetStore:
    """A custom store, as a user would write one over Redis or a database."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.released: list[str] = []

    def claim(self, key: str) -> bool:
        if key in self.keys:
            return False
        self.keys.add(key)
        return True

    def release(self, key: str) -> None:
        self.keys.discard(key)
        self.released.append(key)


def test_a_custom_store_is_used(
    make_app: AppFactory, identity: SigningIdentity, clock: Clock
) -> None:
    store = SetStore()
    assert isinstance(store, DedupeStore)
    app, receiver = make_app(dedupe=store)
    receiver.handler(topic="ok")(lambda n: None)
    receiver.handler(topic="broken")(lambda n: 1 / 0)
    deliver(app, identity, clock, message_id="m-1", topic_name="ok", topic_owner="o")
    deliver(app, identity, clock, message_id="m-2", topic_name="broken", topic_owner="o")
    assert store.keys == {"o\nok\ntest-subscription\nm-1"}
    assert store.released == ["o\nbroken\ntest-subscription\nm-2"]


class TestInMemoryStore:
    def test_claims_once_per_window(self) -> None:
        clock = Clock(0)
        store = InMemoryDedupeStore(window=10, timer=clock)
        assert store.claim("k")
        assert not store.claim("k")
        clock.advance(11)
        assert store.claim("k")

    def test_release_allows_a_new_claim(self) -> None:
        store = InMemoryDedupeStore()
        store.claim("k")
        store.release("k")
        store.release("never-claimed")
        assert store.claim("k")

    def test_concurrent_claims_have_one_winner(self) -> None:
        store = InMemoryDedupeStore()
        wins: list[bool] = []
        start = threading.Barrier(8)

        def claim() -> None:
            start.wait(timeout=5)
            wins.append(store.claim("k"))

        threads = [threading.Thread(target=claim) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=5)
        assert sorted(wins) == [False] * 7 + [True]

    def test_maxsize_bounds_memory(self) -> None:
        store = InMemoryDedupeStore(maxsize=2)
        for key in ("a", "b", "c"):
            assert store.claim(key)
        assert store.claim("a")  # forgotten early: a duplicate may pass, nothing is lost
