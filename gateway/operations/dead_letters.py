"""Delivery dead letters, for every front end (the admin API, ``mns-gateway dead-letters``, the
console): list, show and replay.

A dead letter is a message whose subscription's retries ran out (docs/protocol.md#retry-schedules).
A replay is a new delivery of the same MessageId; its ``Replay`` operation-log record is written by
the delivery worker that makes the first attempt, with the replay's request id, in whichever
process that is (the command line has no operation log of its own).
"""

from __future__ import annotations

from typing import Final

from gateway.delivery.records import DeadLetter
from gateway.errors.mns import MNSError
from gateway.observability.operations import Action, Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.protocol.listing import Page
from gateway.protocol.request_ids import new_request_id
from gateway.protocol.text import storable, storable_or_none

#: How many dead letters one listing may ask for, on every front end.
LIMITS: Final = (1, 1000)


def list_dead_letters(
    ops: Operations,
    caller: Caller,
    marker: str,
    limit: int,
    topic: str | None = None,
    *,
    subscription: str | None = None,
    since_ms: int | None = None,
) -> Page[DeadLetter]:
    """The dead letters after ``marker``, oldest first, at most ``limit`` (within
    :data:`LIMITS`), of ``topic`` (and ``subscription``) dead at or after ``since_ms``."""
    low, high = LIMITS
    if not low <= limit <= high:
        raise MNSError("InvalidArgument", f"The value of limit should between {low} and {high}.")
    # Filters are text like any other: what no store can compare is refused, on every backend.
    marker = storable(marker, "marker")
    topic = storable_or_none(topic, "topic")
    subscription = storable_or_none(subscription, "subscription")

    def work(call: Call) -> Page[DeadLetter]:
        return ops.store.deliveries.list_dead_letters(
            marker, limit, topic, subscription_name=subscription, since_ms=since_ms
        )

    return ops.hooks.run(Call("ListDeadLetters", Field.TOPIC_NAME, topic or "", caller), work)


def get_dead_letter(ops: Operations, caller: Caller, letter_id: str) -> DeadLetter:
    """One dead letter with every attempt (``DeadLetterNotExist`` if there is none)."""

    def work(call: Call) -> DeadLetter:
        return ops.store.deliveries.get_dead_letter(letter_id)

    return ops.hooks.run(Call("GetDeadLetter", Field.TOPIC_NAME, "", caller), work)


def replay_dead_letter(
    ops: Operations,
    caller: Caller,
    letter_id: str,
    *,
    force: bool = False,
    seen_replayed_at: int | None = None,
) -> str:
    """Deliver a dead letter again (same MessageId): the new delivery's id.

    Refused for one replayed before unless ``force`` (``DeadLetterAlreadyReplayed``), so a
    retried command never silently starts a second delivery chain. The console passes
    ``seen_replayed_at``, the last replay its page showed (0: none), to replay again only a
    letter nobody replayed meanwhile (:func:`gateway.store.sql.dead_letter_sql.replay`). The
    replay carries the caller's request id, or a new one for a caller without a request.
    """
    guard = None if force else (seen_replayed_at or 0)
    request_id = caller.request_id or new_request_id()

    def work(call: Call) -> str:
        return ops.store.deliveries.replay_dead_letter(letter_id, request_id, if_replayed_at=guard)

    return ops.hooks.run(Call(Action.REPLAY, Field.TOPIC_NAME, "", caller), work)
