"""Redrive: a dead-letter queue's messages moved back to the queues they came from (the
console's action, docs/console.md#redrive)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gateway.errors.mns import MNSError
from gateway.observability.operations import Action, Field, RequestFacts
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.protocol.names import validate_name
from gateway.queues import oplog_records as oplog
from gateway.store.redrive import Redriven, redrive_queue


@dataclass(frozen=True)
class Redrove:
    dead_letter_queue: str
    redriven: Redriven
    #: The source queues whose logs get the records: those with LoggingEnabled, or all of them
    #: when the dead-letter queue has it.
    logged: frozenset[str]

    @property
    def logging_enabled(self) -> bool:
        return bool(self.logged)

    def log_records(self, facts: RequestFacts, action: Action | str) -> list[dict]:
        """One ``Redrive`` record per message moved, in the log of the queue it went back to."""
        by_source: dict[str, list[tuple[str, str]]] = {}
        for moved in self.redriven.messages:
            if moved.queue_name in self.logged:
                by_source.setdefault(moved.queue_name, []).append(
                    (moved.message_id, moved.dead_letter_message_id)
                )
        return [
            record
            for source, messages in by_source.items()
            for record in oplog.redriven_records(
                replace(facts, name=source), self.dead_letter_queue, messages
            )
        ]


def redrive(ops: Operations, caller: Caller, name: str, limit: int) -> Redriven:
    """Move up to ``limit`` messages of dead-letter queue ``name`` back, in one transaction."""
    validate_name("queue", name)

    def work(call: Call) -> Redrove:
        result = redrive_queue(ops.store.queues, name, limit)
        everywhere = _logging_enabled(ops, name)
        sources = {m.queue_name for m in result.messages}
        logged = {s for s in sources if everywhere or _logging_enabled(ops, s)}
        return Redrove(name, result, frozenset(logged))

    return ops.hooks.run(Call(Action.REDRIVE, Field.QUEUE_NAME, name, caller), work).redriven


def _logging_enabled(ops: Operations, name: str) -> bool:
    """Whether the queue has LoggingEnabled; ``False`` once it was deleted (the redrive is done
    all the same)."""
    try:
        return ops.store.queues.get_queue(name)[0].attributes.logging_enabled
    except MNSError:
        return False
