"""``mns-gateway subscriptions standard-webhooks TOPIC SUBSCRIPTION on|off|rotate``: a
subscription's Standard Webhooks signatures on the data dir's store (or
``MNS_GATEWAY_DATABASE_URL``'s), docs/delivery.md#standard-webhooks-signatures. ``on`` and
``rotate`` print the secret; without a switch, whether they are on. ``mns-gateway admin
standard-webhooks`` does the same on a gateway elsewhere, through its admin API."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gateway.cli.common import emit, existing_settings, on_operations, with_json
from gateway.errors import ExitCode
from gateway.errors.commands import CommandError

if TYPE_CHECKING:
    from gateway.cli.admin_client import RemoteStandardWebhooks
    from gateway.operations import Operations

USAGE = "subscriptions standard-webhooks needs a topic, a subscription and on, off or rotate"
#: As :data:`gateway.operations.standard_webhooks.ACTIONS`, which this module imports only when a
#: command runs: the command line is parsed before ``serve`` lets gevent patch anything.
ACTIONS = ("on", "off", "rotate")


def _check(args: argparse.Namespace) -> None:
    if args.topic is None or args.name is None:
        raise CommandError(USAGE)
    if args.switch is not None and args.switch not in ACTIONS:
        raise CommandError(f"{USAGE}, not {args.switch!r}")


def standard_webhooks_command(args: argparse.Namespace) -> int:
    from gateway.operator_documents.standard_webhooks import describe

    _check(args)
    emit(args, on_operations(existing_settings, args, lambda ops: run(args, ops)), describe)
    return ExitCode.OK


def run(args: argparse.Namespace, ops: Operations) -> dict[str, Any]:
    from gateway.operations import standard_webhooks
    from gateway.operations.calls import local_caller
    from gateway.operator_documents.standard_webhooks import document

    caller = local_caller()
    if args.switch is None:
        return document(standard_webhooks.webhook_status(ops, caller, args.topic, args.name))
    return document(
        standard_webhooks.switch_webhooks(ops, caller, args.topic, args.name, args.switch)
    )


def remote(args: argparse.Namespace, switch: RemoteStandardWebhooks) -> int:
    """``mns-gateway admin standard-webhooks``: the same, through a gateway's admin API."""
    from gateway.operator_documents.standard_webhooks import describe

    _check(args)
    emit(args, switch.switch(args.topic, args.name, args.switch), describe)
    return ExitCode.OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``admin standard-webhooks``'s arguments."""
    add_subscription_and_switch(parser)
    with_json(parser)


def add_subscription_and_switch(parser: argparse.ArgumentParser, switch_for: str = "") -> None:
    """The topic, the subscription and the switch, as ``admin standard-webhooks`` and
    ``subscriptions`` (``switch_for``: which of its actions reads the switch) take them."""
    parser.add_argument("topic", nargs="?", help="the topic")
    parser.add_argument("name", nargs="?", help="the subscription")
    parser.add_argument(
        "switch",
        nargs="?",
        metavar="on|off|rotate",
        help=f"{switch_for}turn them on (prints the secret), off, or rotate the secret (prints"
        " the new one; the old one signs too for 24 hours); none: whether they are on",
    )
