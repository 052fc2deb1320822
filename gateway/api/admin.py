"""Operator endpoints: dead letters (list, inspect, replay).

They sit behind the same MNS request signature as the API; when ``MNS_GATEWAY_ADMIN_ACCESS_KEYS``
is set, only those access keys may use them. Answers are JSON: these are not MNS operations and
no MNS SDK calls them, while operators' tools read JSON most easily.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, g, jsonify

from gateway.api.context import gateway, log_operations, query_params
from gateway.delivery.records import DeadLetter
from gateway.oplog import Action, Field
from gateway.protocol.errors import MNSError

blueprint = Blueprint("admin", __name__, url_prefix="/admin")


@blueprint.before_request
def admin_only() -> None:
    allowed = gateway().settings.admin_access_keys
    if allowed and g.get("access_key_id") not in allowed:
        raise MNSError("AccessDenied")


def dead_letter_summary(letter: DeadLetter) -> dict[str, Any]:
    return {
        "Id": letter.id,
        "MessageId": letter.message.id,
        "TopicName": letter.message.topic_name,
        "SubscriptionName": letter.subscription.name,
        "Endpoint": letter.subscription.endpoint,
        "Reason": letter.reason,
        "Attempts": len(letter.attempts),
        "DeadAt": letter.dead_at_ms,
        "ReplayedAt": letter.replayed_at_ms,
        # Where else it went: docs/delivery.md#subscription-dead-letter-queues
        "DeadLetterQueue": _dead_letter_queue(letter),
    }


def _dead_letter_queue(letter: DeadLetter) -> dict[str, Any] | None:
    """The subscription's dead-letter queue and the message's id there; MessageId ``None``
    when the queue was gone or refused it; ``None`` without a dead-letter queue."""
    if letter.dead_letter_queue is None:
        return None
    return {"Queue": letter.dead_letter_queue, "MessageId": letter.dead_letter_queue_message_id}


def dead_letter_detail(letter: DeadLetter) -> dict[str, Any]:
    message = letter.message
    return {
        **dead_letter_summary(letter),
        "NotifyStrategy": letter.subscription.notify_strategy.value,
        "NotifyContentFormat": letter.subscription.notify_content_format.value,
        "MessageBody": message.body,
        "MessageBodyMD5": message.body_md5,
        "MessageTag": message.tag,
        "PublishTime": message.publish_time_ms,
        "AttemptHistory": [a.fields() for a in letter.attempts],
    }


@blueprint.get("/dead-letters")
def list_dead_letters() -> Response:
    params = query_params()
    try:
        limit = int(params.get("limit", "100"))
    except ValueError as exc:
        raise MNSError("InvalidArgument", "limit must be an integer.") from exc
    if not 1 <= limit <= 1000:
        raise MNSError("InvalidArgument", "The value of limit should between 1 and 1000.")
    page = gateway().store.deliveries.list_dead_letters(
        params.get("marker", ""), limit, params.get("topic") or None
    )
    return jsonify(
        {
            "DeadLetters": [dead_letter_summary(d) for d in page.items],
            "NextMarker": page.next_marker,
        }
    )


@blueprint.get("/dead-letters/<letter_id>")
def show_dead_letter(letter_id: str) -> Response:
    return jsonify(dead_letter_detail(gateway().store.deliveries.get_dead_letter(letter_id)))


@blueprint.post("/dead-letters/<letter_id>/replay")
def replay_dead_letter(letter_id: str) -> Response:
    deliveries = gateway().store.deliveries
    delivery_id = deliveries.replay_dead_letter(letter_id)
    letter = deliveries.get_dead_letter(letter_id)
    log_operations(
        True,
        Field.TOPIC_NAME,
        letter.message.topic_name,
        lambda facts: [
            facts.record(
                Action.REPLAY,
                SubscriptionName=letter.subscription.name,
                MessageId=letter.message.id,
                Endpoint=letter.subscription.endpoint,
            )
        ],
    )
    return jsonify({"Id": letter_id, "DeliveryId": delivery_id})
