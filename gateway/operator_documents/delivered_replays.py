"""Replaying what was delivered, as operators see it
(docs/delivery.md#replaying-what-was-delivered): the document the admin API answers with and
``mns-gateway deliveries replay`` prints, and the same for people (the command line's output,
the console's flash)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.delivery.replays import iso_utc_ms
from gateway.operations.delivered_replays import DeliveredReplay


def document(done: DeliveredReplay) -> dict[str, Any]:
    return {
        "TopicName": done.topic_name,
        "SubscriptionName": done.subscription_name,
        "Since": done.window.since_ms,
        "Until": done.window.until_ms,
        "DryRun": done.dry_run,
        "Queued": done.count.queued,
        "SkippedPending": done.count.pending,
        "SkippedNotKept": done.count.not_kept,
        "RequestId": done.request_id,
    }


def describe(document: Mapping[str, Any]) -> str:
    """For people: how many were (or would be) queued, and what was skipped and why."""
    where = f"{document['TopicName']}/{document['SubscriptionName']}"
    window = f"{iso_utc_ms(document['Since'])} to {iso_utc_ms(document['Until'])}"
    verb = "would queue" if document["DryRun"] else "queued"
    lines = [f"{verb} {document['Queued']} of the messages delivered to {where} from {window}"]
    if document["SkippedPending"]:
        lines.append(
            f"skipped {document['SkippedPending']} still pending for {where}"
            " (they will be pushed anyway)"
        )
    if document["SkippedNotKept"]:
        lines.append(
            f"skipped {document['SkippedNotKept']} the topic no longer keeps"
            " (the history keeps when a message was delivered, not the message)"
        )
    return "\n".join(lines)
