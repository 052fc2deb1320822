"""PublishMessage, for every front end: a draft in, the stored message out.

The message is built once: the front end's parser makes the draft, the hooks add to it (tracing
its creation context), and the store gives it its MessageId and publish time as it stores it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.breaker.events import refuse_forged_event
from gateway.observability.operations import Action, Field, RequestFacts
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.protocol.names import validate_name
from gateway.topics.records import PublishDraft, Published, TopicMessage


@dataclass(frozen=True)
class PublishedMessage:
    message: TopicMessage
    published: Published

    @property
    def logging_enabled(self) -> bool:
        return self.published.logging_enabled

    def log_records(self, facts: RequestFacts, action: Action | str) -> list[dict]:
        message = self.message
        return [
            facts.record(Action.PUBLISH_MESSAGE, MessageId=message.id, Time=message.publish_time_ms)
        ]


def publish(ops: Operations, caller: Caller, draft: PublishDraft) -> TopicMessage:
    """Store ``draft`` with one delivery per matching subscription, and wake the workers."""
    validate_name("topic", draft.topic_name)

    def work(call: Call) -> PublishedMessage:
        refuse_forged_event(draft.topic_name, draft.tag, ops.settings.breaker_events_topic)
        (stamped,) = ops.hooks.drafted(call, [draft])
        return PublishedMessage(*ops.store.topics.publish_draft(stamped))

    call = Call(Action.PUBLISH_MESSAGE, Field.TOPIC_NAME, draft.topic_name, caller, "send")
    return ops.hooks.run(call, work).message
