"""The store tests' defaults: an injected clock and a QueueStore on each backend (modules that
test something else define their own ``store``)."""

from __future__ import annotations

import pytest

from gateway.store.queues import QueueStore
from tests.conftest import OpenDatabase
from tests.gateway.store.queue_helpers import open_store
from tests.support.clock import Clock


@pytest.fixture()
def store(open_database: OpenDatabase, clock: Clock) -> QueueStore:
    return open_store(open_database, clock)
