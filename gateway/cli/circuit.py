"""``mns-gateway subscriptions health`` and ``subscriptions circuit``: subscription endpoints'
circuit breakers and their overrides, on the data dir's store
(docs/delivery.md#endpoint-health)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gateway.admin import endpoint_health
from gateway.cli.common import emit, existing_settings, on_store
from gateway.cli.topics import existing_subscription, existing_topic
from gateway.config.settings import Settings
from gateway.errors import ExitCode

if TYPE_CHECKING:
    from gateway.store.base import Store


def circuit_command(args: argparse.Namespace) -> int:
    emit(args, on_store(existing_settings, args, lambda s, c: run(args, s, c)), _describe)
    return ExitCode.OK


def run(args: argparse.Namespace, store: Store, settings: Settings) -> dict[str, Any]:
    # An override's transition is an operator event like any other.
    store.deliveries.events_topic = settings.breaker_events_topic
    if args.action == "circuit":
        return endpoint_health.override(
            store.topics, store.deliveries, args.topic, args.name, args.override
        )
    # A topic or subscription that is not there is an error, not "all is well".
    if args.name is not None:
        existing_subscription(store, args.topic, args.name)
    elif args.topic is not None:
        existing_topic(store, args.topic)
    if args.name is not None:
        return endpoint_health.subscription_health(
            store.topics, store.deliveries, args.topic, args.name
        )
    return endpoint_health.health(store.deliveries, args.topic)


def _describe(document: dict[str, Any]) -> str:
    return endpoint_health.describe(document)
