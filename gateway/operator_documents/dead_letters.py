"""Dead letters as operators see them: the documents the admin API answers with and
``mns-gateway dead-letters`` prints (``--json``, or described for people), local or remote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.delivery.error_text import error_excerpt
from gateway.delivery.records import Attempt, DeadLetter
from gateway.operator_documents.times import iso_utc
from gateway.protocol.listing import Page


def summary(letter: DeadLetter) -> dict[str, Any]:
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


def detail(letter: DeadLetter) -> dict[str, Any]:
    message = letter.message
    return {
        **summary(letter),
        "NotifyStrategy": letter.subscription.notify_strategy.value,
        "NotifyContentFormat": letter.subscription.notify_content_format.value,
        "MessageBody": message.body,
        "MessageBodyMD5": message.body_md5,
        "MessageTag": message.tag,
        "PublishTime": message.publish_time_ms,
        "AttemptHistory": [attempt_document(a) for a in letter.attempts],
    }


def attempt_document(attempt: Attempt) -> dict[str, Any]:
    """One push attempt, named as every other field of the document (times in epoch ms)."""
    return {
        "Attempt": attempt.attempt,
        "AttemptedAt": attempt.attempted_at_ms,
        "Outcome": attempt.outcome,
        "StatusCode": attempt.status_code,
        "LatencyMs": attempt.latency_ms,
        "Error": attempt.error,
    }


def listing(page: Page[DeadLetter]) -> dict[str, Any]:
    return {"DeadLetters": [summary(d) for d in page.items], "NextMarker": page.next_marker}


def replayed(letter_id: str, delivery_id: str) -> dict[str, Any]:
    return {"Id": letter_id, "DeliveryId": delivery_id}


def describe_listing(document: Mapping[str, Any]) -> str:
    """A listing for people: one line per dead letter, times in ISO-8601 UTC."""
    lines = [
        f"{d['Id']}  {d['TopicName']}/{d['SubscriptionName']}  dead {iso_utc(d['DeadAt'])}  "
        f"{d['Attempts']} attempts  {d['Reason']}"
        + (f"  replayed {iso_utc(d['ReplayedAt'])}" if d.get("ReplayedAt") else "")
        + (f"  also in {describe_queue(d['DeadLetterQueue'])}" if d.get("DeadLetterQueue") else "")
        for d in document["DeadLetters"]
    ]
    if not lines:
        lines.append("no dead letters")
    if document.get("NextMarker"):
        lines.append(f"more: --marker {document['NextMarker']}")
    return "\n".join(lines)


def describe_queue(where: Mapping[str, Any] | None) -> str:
    """Where a dead letter's message went besides the dead letters: its subscription's
    dead-letter queue (and the message's id there), or why not."""
    if not where:
        return "-"
    if where.get("MessageId") is None:
        return f"queue {where['Queue']} (not taken: missing or refused)"
    return f"queue {where['Queue']} as {where['MessageId']}"


def describe_detail(document: Mapping[str, Any]) -> str:
    """One dead letter for people: its message, subscription and every attempt."""
    fields = [
        ("Id", document["Id"]),
        ("MessageId", document["MessageId"]),
        ("Topic", document["TopicName"]),
        ("Subscription", document["SubscriptionName"]),
        ("Endpoint", document["Endpoint"]),
        ("NotifyStrategy", document["NotifyStrategy"]),
        ("Format", document["NotifyContentFormat"]),
        ("Published", iso_utc(document["PublishTime"])),
        ("Dead", iso_utc(document["DeadAt"])),
        ("Replayed", iso_utc(document["ReplayedAt"])),
        ("Reason", document["Reason"]),
        ("DeadLetterQueue", describe_queue(document.get("DeadLetterQueue"))),
        ("MessageTag", document["MessageTag"] or "-"),
        ("MessageBody", document["MessageBody"]),
    ]
    lines = [f"{name + ':':<17}{value}" for name, value in fields]
    lines.append("Attempts:")
    lines += [f"  {describe_attempt(attempt)}" for attempt in document["AttemptHistory"]]
    return "\n".join(lines)


def describe_attempt(attempt: Mapping[str, Any]) -> str:
    """``#2  <time>  http_error  HTTP 502  12 ms  <error>``: an endpoint's HTML error page
    reduced to one line of its text, as the report shows it (``--json`` keeps it whole)."""
    status, latency, error = attempt["StatusCode"], attempt["LatencyMs"], attempt.get("Error")
    return (
        f"#{attempt['Attempt']}  {iso_utc(attempt['AttemptedAt'])}  {attempt['Outcome']}"
        + (f"  HTTP {status}" if status is not None else "")
        + (f"  {latency:.0f} ms" if latency is not None else "")
        + (f"  {error_excerpt(error)}" if error else "")
    )
