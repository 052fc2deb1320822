"""The store: the gateway's one way to persistent state, independent of the database behind it.

:class:`Store` holds the parts of the domain over one :class:`Database` (topics, queues,
deliveries, the account's attributes, issued temporary credentials) and the clock they share,
so tests control time by handing in their own.
:func:`compose_store` is where the parts and what they share (one MessageId factory, one set of
wake-ups) are put together, explicitly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from gateway.breaker.state import BreakerPolicy
from gateway.queues.message_ids import MessageIdFactory
from gateway.queues.waiters import DEFAULT_MAX_WAITERS, DEFAULT_RECHECK_SECONDS, WaiterHub
from gateway.store.account import AccountStore
from gateway.store.backends.database import Database
from gateway.store.console import ConsoleReads
from gateway.store.console_sessions import ConsoleSessions
from gateway.store.control import ControlStore
from gateway.store.deliveries import DeliveryStore
from gateway.store.inbox import InboxStore
from gateway.store.notify.notifier import Wakeups
from gateway.store.queues import DEFAULT_MAX_QUEUES, QueueStore
from gateway.store.reset import reset
from gateway.store.shared import SharedSettings
from gateway.store.sign_in import SignInAttempts
from gateway.store.sql.retention_sql import DEFAULT_HISTORY_RETENTION
from gateway.store.standard_webhooks import StandardWebhookStore
from gateway.store.temporary_credentials import TemporaryCredentialStore
from gateway.store.topics import TopicStore

__all__ = ["Database", "Store", "compose_store"]


@dataclass(frozen=True, eq=False)
class Store:
    database: Database
    clock: Callable[[], float]
    topics: TopicStore
    queues: QueueStore
    deliveries: DeliveryStore
    wakeups: Wakeups
    account: AccountStore
    credentials: TemporaryCredentialStore
    inbox: InboxStore
    control: ControlStore

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    @property
    def standard_webhooks(self) -> StandardWebhookStore:
        """Subscriptions' Standard Webhooks secrets (a view over the database, made on use)."""
        return StandardWebhookStore(self.database, self.clock)

    def shared_settings(self) -> SharedSettings:
        """Settings every replica shares (the console's session key, generated keys)."""
        return SharedSettings(self.database)

    def console_reads(self) -> ConsoleReads:
        """What the web console's pages read that no operation returns (figures, overviews)."""
        return ConsoleReads(self.database, self.clock)

    def console_sessions(self, clock: Callable[[], float]) -> ConsoleSessions:
        return ConsoleSessions(self.database, clock)

    def sign_in_attempts(self, clock: Callable[[], float]) -> SignInAttempts:
        return SignInAttempts(self.database, clock)

    def ping(self) -> bool:
        return self.database.ping()

    def request_failed(self) -> None:
        """Count a request that failed because the database is unavailable, for the outage's
        log line when it ends."""
        self.database.outage.request_failed()

    def reset(self) -> list[str]:
        """Empty every data table (development gateways only: :mod:`gateway.store.reset`)."""
        return self.database.write(reset)

    def close(self) -> None:
        self.database.close()


def compose_store(
    database: Database,
    clock: Callable[[], float] = time.time,
    *,
    max_waiters: int = DEFAULT_MAX_WAITERS,
    max_queues: int | None = DEFAULT_MAX_QUEUES,
    recheck_seconds: float = DEFAULT_RECHECK_SECONDS,
    monotonic: Callable[[], float] = time.monotonic,
    region: str = "local",
    account_id: str = "1234567890",
    history_retention: int = DEFAULT_HISTORY_RETENTION,
    breaker: BreakerPolicy | None = None,
    events_topic: str = "",
) -> Store:
    """The store over ``database``: ``max_waiters`` long polls per process, ``max_queues`` queues
    (``None``: no limit), long polls re-checking the queue at least every ``recheck_seconds``;
    ``region`` and ``account_id`` name its queues in the DLQSourceArn of dead-lettered
    messages; ``history_retention`` is ``MNS_GATEWAY_HISTORY_RETENTION``; ``breaker`` the push
    endpoints' circuit breaker and ``events_topic`` the topic its transitions are published to
    (docs/delivery.md#endpoint-health)."""
    ids = MessageIdFactory()
    wakeups = Wakeups(database.notifier, WaiterHub(max_waiters))
    queues = QueueStore(
        database,
        clock,
        wakeups=wakeups,
        ids=ids,
        max_queues=max_queues,
        recheck_seconds=recheck_seconds,
        monotonic=monotonic,
        region=region,
        account_id=account_id,
    )
    return Store(
        database=database,
        clock=clock,
        topics=TopicStore(database, clock, wakeups=wakeups, ids=ids),
        queues=queues,
        deliveries=DeliveryStore(
            database,
            clock,
            wakeups=wakeups,
            queues=queues,
            region=region,
            account_id=account_id,
            history_retention=history_retention,
            breaker=breaker,
            events_topic=events_topic,
        ),
        wakeups=wakeups,
        account=AccountStore(database),
        credentials=TemporaryCredentialStore(database, clock),
        inbox=InboxStore(database, clock),
        control=ControlStore(database, clock),
    )
