"""Replaying what was delivered, as operators ask for it: the one replay that
``mns-gateway deliveries replay``, ``POST /admin/topics/{topic}/subscriptions/{name}/replay``
and the console's form all run, and the document they answer with
(docs/delivery.md#replaying-what-was-delivered).

How long the delivered history is kept comes from :func:`kept_seconds` alone, so the window's
check and its error say the same thing on every front end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.config.settings import Settings
from gateway.delivery.replays import (
    CLI_LABELS,
    DEFAULT_HISTORY_SECONDS,
    iso_utc_ms,
    replay_window,
)
from gateway.protocol.names import validate_name
from gateway.protocol.request_ids import new_request_id
from gateway.store.delivered_replays import Target, replay_delivered
from gateway.store.deliveries import DeliveryStore


def kept_seconds(settings: Settings) -> int:
    """How long the gateway keeps its delivered history, in seconds: how far back a replay may
    reach (``MNS_GATEWAY_HISTORY_RETENTION``, which the store's retention pass keeps to)."""
    return settings.history_retention


def replay(
    deliveries: DeliveryStore,
    topic_name: str,
    subscription_name: str,
    since: str,
    until: str | None,
    *,
    request_id: str,
    kept: int = DEFAULT_HISTORY_SECONDS,
    dry_run: bool = False,
    labels: tuple[str, str] = CLI_LABELS,
) -> dict[str, Any]:
    """Queue again (or, ``dry_run``, count) every message delivered to the subscription in the
    window ``since``/``until`` (ISO 8601 UTC; ``until`` defaults to now); ``InvalidArgument``
    for a window that is not in the past or reaches past the ``kept`` seconds of history,
    ``TopicNotExist``/``SubscriptionNotExist`` as the API says them."""
    validate_name("topic", topic_name)  # what no topic can be named is not looked up
    validate_name("subscription", subscription_name)
    window = replay_window(since, until, deliveries.now_ms(), kept, labels)
    target = Target(topic_name, subscription_name, window, request_id, dry_run)
    count = replay_delivered(deliveries, target)
    return {
        "TopicName": topic_name,
        "SubscriptionName": subscription_name,
        "Since": window.since_ms,
        "Until": window.until_ms,
        "DryRun": dry_run,
        "Queued": count.queued,
        "SkippedPending": count.pending,
        "SkippedNotKept": count.not_kept,
        "RequestId": request_id,
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


class LocalDeliveries:
    """The replay on this machine's store, as ``mns-gateway deliveries`` runs it: with this
    command's own request id, and the history kept as ``settings`` say."""

    def __init__(self, deliveries: DeliveryStore, settings: Settings) -> None:
        self._deliveries = deliveries
        self._kept = kept_seconds(settings)

    def replay(
        self, topic: str, subscription: str, since: str, until: str | None, dry_run: bool
    ) -> dict[str, Any]:
        return replay(
            self._deliveries,
            topic,
            subscription,
            since,
            until,
            request_id=new_request_id(),
            kept=self._kept,
            dry_run=dry_run,
        )
