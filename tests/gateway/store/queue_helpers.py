"""Helpers shared by the QueueStore tests: an injected clock and one-line operations."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.errors.mns import MNSError
from gateway.queues.records import NewMessage, QueueAttributes
from gateway.store.base import compose_store
from gateway.store.queues import QueueStore
from tests.conftest import OpenDatabase
from tests.support.clock import T0, Clock  # noqa: F401 - T0 for the store's tests


def open_store(open_database: OpenDatabase, clock: Clock, **options: object) -> QueueStore:
    return compose_store(open_database(), clock, **options).queues  # type: ignore[arg-type]


def make_queue(store: QueueStore, name: str = "q", **attributes: object) -> str:
    assert store.create_queue(name, QueueAttributes(**attributes)) is True  # type: ignore[arg-type]
    return name


def send(store: QueueStore, queue: str, body: str, **fields: object) -> str:
    _, (sent,) = store.send(queue, [NewMessage(body, **fields)])  # type: ignore[arg-type]
    assert not isinstance(sent, MNSError)
    return sent.message_id


def counts(store: QueueStore, queue: str) -> tuple[int, int, int]:
    c = store.get_queue(queue)[1]
    return c.active, c.inactive, c.delayed


def error_code(call: Callable[[], object]) -> str:
    with pytest.raises(MNSError) as caught:
        call()
    return caught.value.code
