"""Which subscriptions receive a published message: the FilterTag rule, pure."""

from __future__ import annotations

from collections.abc import Iterable

from gateway.model import Subscription


def accepts(subscription: Subscription, message_tag: str | None) -> bool:
    """A subscription without a FilterTag takes every message; one with a tag, only equal tags."""
    return subscription.filter_tag is None or subscription.filter_tag == message_tag


def matching_subscriptions(
    subscriptions: Iterable[Subscription], message_tag: str | None
) -> list[Subscription]:
    return [sub for sub in subscriptions if accepts(sub, message_tag)]
