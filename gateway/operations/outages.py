"""Outage bookkeeping as a hook: an operation that failed because the database is unavailable is
counted once, whatever the front end, for the outage's log line when it ends
(docs/deploy.md#database-and-disk-faults)."""

from __future__ import annotations

from collections.abc import Callable

from gateway.errors import TryAgainError
from gateway.operations.calls import Call
from gateway.operations.hooks import Hook


class OutageHook(Hook):
    def __init__(self, request_failed: Callable[[], None]) -> None:
        self._request_failed = request_failed

    def after(self, call: Call, result: object, error: BaseException | None) -> None:
        if isinstance(error, TryAgainError):
            self._request_failed()
