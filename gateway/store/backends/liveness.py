"""Whether a pooled PostgreSQL connection still works, asked only when the answer can be stale.

The pool hands out a connection after a check: psycopg_pool's ``check_connection`` sends an empty
query and waits for it, so that a connection that died in the pool (the server restarted, a
proxy dropped it) is replaced instead of failing the request that gets it. That wait is a round
trip before every transaction, as much client CPU as a small statement and on a publish half of
its time in the database (docs/benchmarks.md#a-pooled-connections-check). A connection given
back less than :attr:`Liveness.bypass_s` ago worked then; it is handed out unchecked, as
HikariCP does for its ``aliveBypassWindowMs`` (500 ms there too). If it did die in that window,
the transaction fails as in any outage (``StoreUnavailableError``) and the pool discards it.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

#: How long a connection given back to the pool counts as working.
BYPASS_S = 0.5


class Liveness:
    """The pool's ``check`` (:meth:`check`) and ``reset`` (:meth:`returned`) callbacks, on a
    monotonic ``clock`` in seconds. ``probe`` is the round trip made for a connection not used
    lately."""

    def __init__(
        self,
        bypass_s: float = BYPASS_S,
        clock: Callable[[], float] = time.monotonic,
        probe: Callable[[psycopg.Connection[Any]], None] = ConnectionPool.check_connection,
    ) -> None:
        self.bypass_s = bypass_s
        self._clock = clock
        self._probe = probe
        # Weak: the pool closes and drops connections on its own; none is kept alive here.
        self._returned: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = (
            weakref.WeakKeyDictionary()
        )

    def returned(self, connection: psycopg.Connection[Any]) -> None:
        """A connection came back to the pool in working order (the pool's ``reset``, called
        once the connection is idle; a broken one is discarded before)."""
        self._returned[connection] = self._clock()

    def check(self, connection: psycopg.Connection[Any]) -> None:
        """Raise if ``connection`` no longer works, asking the server only if it was not used
        within :attr:`bypass_s` (a new one, or one idle longer)."""
        at = self._returned.pop(connection, None)
        if at is not None and self._clock() - at < self.bypass_s:
            return
        self._probe(connection)
