"""``mns-gateway subscriptions health`` and ``subscriptions circuit``: subscription endpoints'
circuit breakers and their overrides, on the data dir's store
(docs/delivery.md#endpoint-health)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gateway.cli.common import emit, existing_settings, on_operations
from gateway.cli.topics import existing_subscription, existing_topic
from gateway.errors import ExitCode

if TYPE_CHECKING:
    from gateway.operations import Operations


def circuit_command(args: argparse.Namespace) -> int:
    from gateway.operator_documents.endpoint_health import describe

    emit(args, on_operations(existing_settings, args, lambda ops: run(args, ops)), describe)
    return ExitCode.OK


def run(args: argparse.Namespace, ops: Operations) -> dict[str, Any]:
    from gateway.operations import endpoint_health
    from gateway.operations.calls import local_caller
    from gateway.operator_documents.endpoint_health import health_document, listing

    caller = local_caller()
    if args.action == "circuit":
        return health_document(
            endpoint_health.override_circuit(ops, caller, args.topic, args.name, args.override)
        )
    # A topic or subscription that is not there is an error, not "all is well".
    if args.name is not None:
        existing_subscription(ops.store, args.topic, args.name)
        return health_document(
            endpoint_health.subscription_health(ops, caller, args.topic, args.name)
        )
    if args.topic is not None:
        existing_topic(ops.store, args.topic)
    return listing(endpoint_health.endpoint_health(ops, caller, args.topic))
