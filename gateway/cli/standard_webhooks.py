"""``mns-gateway subscriptions standard-webhooks TOPIC SUBSCRIPTION on|off|rotate``: a
subscription's Standard Webhooks signatures on the data dir's store (or
``MNS_GATEWAY_DATABASE_URL``'s), docs/delivery.md#standard-webhooks-signatures. ``on`` and
``rotate`` print the secret; without a switch, whether they are on."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gateway.admin import standard_webhooks
from gateway.cli.common import emit, existing_settings, on_store
from gateway.config.settings import Settings
from gateway.errors import ExitCode
from gateway.errors.commands import CommandError

if TYPE_CHECKING:
    from gateway.store.base import Store

USAGE = "subscriptions standard-webhooks needs a topic, a subscription and on, off or rotate"


def standard_webhooks_command(args: argparse.Namespace) -> int:
    if args.topic is None or args.name is None:
        raise CommandError(USAGE)
    if args.switch is not None and args.switch not in standard_webhooks.ACTIONS:
        raise CommandError(f"{USAGE}, not {args.switch!r}")
    emit(
        args,
        on_store(existing_settings, args, lambda s, c: run(args, s, c)),
        standard_webhooks.describe,
    )
    return ExitCode.OK


def run(args: argparse.Namespace, store: Store, settings: Settings) -> dict[str, Any]:
    secrets = store.standard_webhooks
    if args.switch is None:
        return standard_webhooks.status(secrets, args.topic, args.name)
    return standard_webhooks.switch(secrets, args.topic, args.name, args.switch)
