"""``mns-gateway subscriptions``: list a topic's subscriptions; show or set a subscription's
dead-letter queue (docs/delivery.md#subscription-dead-letter-queues); ``health`` and ``circuit``
show its endpoint's circuit breaker and override it (docs/delivery.md#endpoint-health);
``standard-webhooks`` switches its Standard Webhooks signatures
(docs/delivery.md#standard-webhooks-signatures)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gateway.cli.common import Commands, emit, existing_settings, on_operations
from gateway.cli.queue_settings import (
    add_policy_options,
    describe,
    policy_update,
    set_subscription,
    subscription_document,
)
from gateway.cli.standard_webhooks import add_subscription_and_switch
from gateway.cli.topics import existing_subscription, list_subscriptions
from gateway.errors import ExitCode

if TYPE_CHECKING:
    from gateway.operations import Operations


def subscriptions(args: argparse.Namespace) -> int:
    if args.action in ("health", "circuit"):
        from gateway.cli.circuit import circuit_command

        return circuit_command(args)
    if args.action == "standard-webhooks":
        from gateway.cli.standard_webhooks import standard_webhooks_command

        return standard_webhooks_command(args)
    if args.action == "list":
        return list_subscriptions(args)
    emit(args, on_operations(existing_settings, args, lambda ops: run(args, ops)), describe)
    return ExitCode.OK


def run(args: argparse.Namespace, ops: Operations) -> dict[str, Any]:
    # Not there: the words of every command.
    found = existing_subscription(ops.store, args.topic, args.name)
    update = policy_update(args.dlq_target, None, args.dlq_enabled)
    if args.action == "set" and update is not None:
        found = set_subscription(ops, args.topic, args.name, update)
    return subscription_document(found)


def add_command(commands: Commands) -> None:
    parser = commands.add_parser(
        "subscriptions",
        help="list a topic's subscriptions; show or set one's dead-letter queue; health: endpoint"
        " circuit breakers; circuit: override one; standard-webhooks: its signatures",
    )
    parser.add_argument(
        "action",
        choices=("list", "set", "show", "health", "circuit", "standard-webhooks"),
        help="list: a topic's subscriptions; show or set one's dead-letter queue; health:"
        " endpoints' circuit breakers (of every subscription, a topic's, or one); circuit:"
        " override one's breaker (--override); standard-webhooks: its Standard Webhooks"
        " signatures on, off or rotate",
    )
    add_subscription_and_switch(parser, switch_for="standard-webhooks: ")
    add_policy_options(parser)
    parser.add_argument(
        "--override",
        choices=("closed", "open", "auto"),
        help="circuit: force the breaker closed, hold it open, or let it decide (auto)",
    )
    one = (("topic", "name"), "a topic and a subscription")
    parser.set_defaults(
        handler=subscriptions,
        needs={
            "list": ("topic", "a topic"),
            "show": one,
            "set": one,
            "standard-webhooks": one,
            "circuit": (("topic", "name", "override"), "a topic, a subscription and --override"),
        },
        # The switch is standard-webhooks' alone (gateway.cli.commands.parse).
        unused={action: ("switch",) for action in ("list", "set", "show", "health", "circuit")},
    )
