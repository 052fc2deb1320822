"""The seam a database backend implements: run a function on a connection, read or write."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

from gateway.store.sql.connection import Connection

if TYPE_CHECKING:
    # Only named here: the serve arbiter imports this module (via reach) before gevent patches.
    from gateway.store.backends.outage import Outage
    from gateway.store.notify.notifier import Notifier

T = TypeVar("T")


class Database(Protocol):
    """SQLite (:mod:`gateway.store.backends.sqlite`), PostgreSQL
    (:mod:`gateway.store.backends.postgres`) or the
    in-memory stub for tests (:mod:`gateway.store.backends.memory`).

    Its :attr:`notifier` carries wake-ups to the other processes sharing it; which kind depends on
    the database, so it is the database that provides it.
    """

    @property
    def notifier(self) -> Notifier: ...

    #: Whether the database is failing now, and the log of its outages
    #: (:mod:`gateway.store.backends.outage`); the API counts the requests it failed meanwhile.
    outage: Outage

    def read(self, work: Callable[[Connection], T]) -> T:
        """Run ``work(connection)`` for reading, on one consistent snapshot."""

    def write(self, work: Callable[[Connection], T], *, durable: bool = True) -> T:
        """Run ``work(connection)`` in a transaction committed before this returns; if ``work``
        raises, nothing it did is committed and the exception reaches the caller.

        ``durable=False`` may skip the flush to stable storage: for writes whose loss in a
        power cut loses nothing acknowledged (claims and attempt outcomes of deliveries,
        which at-least-once delivery simply repeats).

        A :class:`~gateway.store.sql.connection.SelfContained` ``work`` makes its own changes
        all-or-nothing (one statement each, or a ``conn.atomic()`` block): a database may then
        run each statement on its own (PostgreSQL: no BEGIN and COMMIT, which cost the driver
        more than a small request's statements), and a durable one does.
        """

    def migrate(self) -> list[int]:
        """Apply pending schema migrations (one process at a time); the versions applied."""

    def ping(self) -> bool: ...

    def close(self) -> None: ...
