"""Deliver again: one message pushed once more to one subscription, logged as a ``Replay``
(the record the admin API's dead-letter replay writes)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gateway.observability.operations import Action, Field, RequestFacts
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations


@dataclass(frozen=True)
class Redelivering:
    delivery_id: str
    topic_name: str
    subscription: str
    message_id: str

    #: Always logged: a person's action on a push is for the report whatever the topic says.
    logging_enabled = True

    def log_records(self, facts: RequestFacts, action: Action | str) -> list[dict]:
        record = replace(facts, name=self.topic_name).record(
            Action.REPLAY, SubscriptionName=self.subscription, MessageId=self.message_id
        )
        return [record]


def deliver_again(ops: Operations, caller: Caller, message_id: str, subscription: str) -> str:
    """The new delivery's id."""

    def work(call: Call) -> Redelivering:
        deliveries = ops.store.deliveries
        delivery_id = deliveries.deliver_again(message_id, subscription)
        topic = deliveries.message_deliveries(message_id).topic_name or ""
        return Redelivering(delivery_id, topic, subscription, message_id)

    call = Call(Action.REPLAY, Field.TOPIC_NAME, "", caller)
    return ops.hooks.run(call, work).delivery_id
