"""Wake-ups between processes sharing a database: two stores on one database stand in for two
gateway processes or replicas (each store has its own notifier, as a process would)."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from gateway.delivery.records import DeliveryJob
from gateway.pushing.senders import SenderRegistry
from gateway.pushing.transport import PushOutcome, PushResult
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.store.base import Store, compose_store
from gateway.store.notify.pg_notifier import CHANNEL, PgNotifier
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.postgres import PostgresServer

#: Far longer than any wait below: work found sooner was announced, not polled for.
NO_POLL = 60.0


@pytest.fixture()
def two_processes(open_database: OpenDatabase) -> tuple[Store, Store]:
    return compose_store(open_database()), compose_store(open_database())


def publish(store: Store, message_id: str) -> None:
    now = store.now_ms()
    store.topics.publish(TopicMessage(message_id, "t", "body", "X", now))


def subscribed(store: Store) -> None:
    store.topics.create_topic("t", 65536, False)
    store.topics.subscribe(Subscription("t", "s", "http://a.test/"))


def test_a_publish_elsewhere_announces_deliveries_here(two_processes: tuple[Store, Store]) -> None:
    a, b = two_processes
    woken = threading.Event()
    a.wakeups.on_deliveries(woken.set)
    subscribed(b)
    publish(b, "M1")
    assert woken.wait(10)


def test_a_publish_without_deliveries_wakes_nobody(two_processes: tuple[Store, Store]) -> None:
    a, b = two_processes
    woken = threading.Event()
    a.wakeups.on_deliveries(woken.set)
    b.topics.create_topic("t", 65536, False)
    publish(b, "M1")  # no subscription: nothing to deliver
    assert not woken.wait(0.5)


class Recording:
    def __init__(self) -> None:
        self.sent = threading.Event()
        self.jobs: list[DeliveryJob] = []

    def send(self, job: DeliveryJob) -> PushResult:
        self.jobs.append(job)
        self.sent.set()
        return PushResult(204, PushOutcome.SUCCESS, None, 1.0)


def test_a_sleeping_worker_delivers_what_another_process_published(
    two_processes: tuple[Store, Store],
) -> None:
    a, b = two_processes
    subscribed(b)
    sender = Recording()
    options = WorkerOptions(threads=2, idle_wait=NO_POLL)
    worker = DeliveryWorker(a.deliveries, SenderRegistry(sender), options)
    worker.start()
    try:
        time.sleep(0.2)  # let the dispatcher find nothing and go to sleep for NO_POLL seconds
        started = time.monotonic()
        publish(b, "M1")
        assert sender.sent.wait(10)
        assert time.monotonic() - started < NO_POLL / 2
        assert [job.message.id for job in sender.jobs] == ["M1"]
    finally:
        worker.stop()


class Ignoring:
    def queue_ready(self, queue_name: str, count: int | None) -> None:
        """Not asked here."""

    def deliveries_due(self) -> None:
        """Not asked here."""


def test_a_listener_on_postgresql_listens_once_listen_returns(postgres: PostgresServer) -> None:
    """A receiver reads its queue and sleeps right after ``listen()``: a send another process
    commits after that must reach it. Returning before the LISTEN was in place, ``listen()`` let
    one such send wake nobody (tests/gateway/queues/test_long_poll.py, once, under CI load)."""
    url = postgres.new_database()
    notifier = PgNotifier(url)
    # Connected beforehand, so that the question follows listen() at once.
    with psycopg.connect(url, autocommit=True) as connection:
        try:
            notifier.listen(Ignoring())
            row = connection.execute(
                "SELECT COUNT(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query = %s",
                (f"LISTEN {CHANNEL}",),
            ).fetchone()
            assert row is not None and row[0] == 1
        finally:
            notifier.close()
