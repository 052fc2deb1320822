"""The operation log as a hook: a LoggingEnabled queue's or topic's records, for every front end.

An operation's result says whether its queue or topic logs operations and builds its records
(:class:`Logged`); the records are only built when somebody will read them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from gateway.observability.operations import Action, OperationLog, RequestFacts
from gateway.operations.calls import Call
from gateway.operations.hooks import Hook


@runtime_checkable
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
        if error is not None or not isinstance(result, Logged) or not result.logging_enabled:
            return
        for record in result.log_records(call.facts(self._account_id), call.action):
            self._log.write(record)
