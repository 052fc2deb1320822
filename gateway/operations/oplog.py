"""The operation log as a hook: a LoggingEnabled queue's or topic's records, for every front end.

An operation's result says whether its queue or topic logs operations and builds its records
(:class:`Logged`); the records are only built when somebody will read them.
"""

from __future__ import annotations

from typing import Protocol

from gateway.observability.operations import Action, OperationLog, RequestFacts
from gateway.operations.calls import Call
from gateway.operations.hooks import Hook


class Logged(Protocol):
    """A result that has operation-log records."""

    @property
    def logging_enabled(self) -> bool: ...

    def log_records(self, facts: RequestFacts, action: Action | str) -> list[dict]: ...


class OperationLogHook(Hook):
    def __init__(self, log: OperationLog, account_id: str) -> None:
        self._log = log
        self._account_id = account_id

    def after(self, call: Call, result: object, error: BaseException | None) -> None:
        # Duck-typed: an isinstance() against a runtime-checkable Protocol inspects every
        # member on each call, a cost every operation would pay.
        if error is not None or not getattr(result, "logging_enabled", False):
            return
        logged: Logged = result  # type: ignore[assignment]
        for record in logged.log_records(call.facts(self._account_id), call.action):
            self._log.write(record)
