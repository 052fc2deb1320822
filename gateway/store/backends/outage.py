"""The database being unavailable: one error for every backend, and one log line per outage.

A database that went away (PostgreSQL restarting, failing over, the network to it dropping) or
a disk that filled up is an expected condition, not a bug: every store call that needs the
database fails with :class:`StoreUnavailableError` within a bounded time, the API answers it with
a retriable MNS error (``gateway.api.app``; docs/protocol.md#when-the-database-is-unavailable) and
the delivery worker backs off and tries again. What an operator needs in the log is when it
began and when it ended, not a traceback per request: :class:`Outage` writes a warning at the
first failure and one line when the database answers again, with how many requests failed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("gateway.store")


class Outage:
    """Tracks whether a database is failing, and logs each outage's start and end once.

    ``failed`` is called for every store call that raised :class:`StoreUnavailableError`,
    ``request_failed`` for every API request answered with it, ``succeeded`` for every call that
    worked (cheap: one attribute read while the database is up). Thread-safe.
    """

    def __init__(
        self,
        name: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = log,
    ) -> None:
        self.name = name
        self._clock = clock
        self._log = logger
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._failed_requests = 0
        self._failed_calls = 0
        #: Outages that have ended, and the length of the last one (for metrics and tests).
        self.outages = 0
        self.last_seconds = 0.0

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, reason: str) -> None:
        with self._lock:
            self._failed_calls += 1
            if self._down_since is not None:
                return
            self._down_since = self._clock()
        self._log.warning(
            "%s unavailable: %s; failing requests until it answers", self.name, reason
        )

    def request_failed(self) -> None:
        with self._lock:
            self._failed_requests += 1

    def succeeded(self) -> None:
        if self._down_since is None:
            return
        with self._lock:
            if self._down_since is None:
                return
            seconds = self._clock() - self._down_since
            requests, calls = self._failed_requests, self._failed_calls
            self._down_since, self._failed_requests, self._failed_calls = None, 0, 0
            self.outages += 1
            self.last_seconds = seconds
        self._log.warning(
            "%s available again after %.1f s; %d requests and %d store calls failed meanwhile",
            self.name,
            seconds,
            requests,
            calls,
        )
