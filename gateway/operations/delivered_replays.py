"""Replaying what was delivered to a subscription in a window, for every front end
(``mns-gateway deliveries replay``, ``POST /admin/topics/{topic}/subscriptions/{name}/replay``,
the console's form; docs/delivery.md#replaying-what-was-delivered).

How long the delivered history is kept comes from the settings alone
(``MNS_GATEWAY_HISTORY_RETENTION``), so the window's check and its error say the same thing on
every front end. Each replayed delivery's ``Replay`` record is written by the delivery worker
that pushes it, with the replay's request id.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.delivery.replays import CLI_LABELS, ReplayCount, ReplayWindow, replay_window
from gateway.observability.operations import Action, Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.protocol.names import validate_name
from gateway.protocol.request_ids import new_request_id
from gateway.store.delivered_replays import Target, replay_delivered


@dataclass(frozen=True)
class DeliveredReplay:
    """What a replay queued (or, ``dry_run``, would queue) and skipped, in which window."""

    topic_name: str
    subscription_name: str
    window: ReplayWindow
    dry_run: bool
    count: ReplayCount
    request_id: str


def replay_delivered_window(
    ops: Operations,
    caller: Caller,
    topic: str,
    subscription: str,
    since: str,
    until: str | None,
    *,
    dry_run: bool = False,
    labels: tuple[str, str] = CLI_LABELS,
) -> DeliveredReplay:
    """Queue again (or, ``dry_run``, count) every message delivered to the subscription in the
    window ``since``/``until`` (ISO 8601 UTC; ``until`` defaults to now); ``InvalidArgument``
    (its words naming the front end's ``labels``) for a window that is not in the past or
    reaches past the history kept, ``TopicNotExist``/``SubscriptionNotExist`` as the API says
    them."""
    validate_name("topic", topic)  # what no topic can be named is not looked up
    validate_name("subscription", subscription)
    request_id = caller.request_id or new_request_id()

    def work(call: Call) -> DeliveredReplay:
        deliveries = ops.store.deliveries
        kept = ops.settings.history_retention
        window = replay_window(since, until, deliveries.now_ms(), kept, labels)
        count = replay_delivered(
            deliveries, Target(topic, subscription, window, request_id, dry_run)
        )
        return DeliveredReplay(topic, subscription, window, dry_run, count, request_id)

    return ops.hooks.run(Call(Action.REPLAY, Field.TOPIC_NAME, topic, caller), work)
