"""``mns-gateway deliveries replay``: push again what was delivered to a subscription in a window
of time, on this data dir's or database's gateway. ``mns-gateway admin deliveries`` runs the
same remotely (:mod:`gateway.cli.admin`), with the same document.

A window that cannot be replayed (a time that does not parse, in the future, ``--until`` not
after ``--since``, or reaching past the history the gateway keeps) is a usage error: one line,
status 2, saying what is kept.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Protocol

from gateway.cli.common import (
    Commands,
    emit,
    existing_settings,
    on_operations,
    with_data_dir,
    with_json,
)
from gateway.errors import ExitCode
from gateway.errors.commands import AdminError, CommandError, UsageError
from gateway.errors.mns import MNSError

if TYPE_CHECKING:
    from gateway.operations import Operations

#: The code of a window that cannot be replayed, from this store or a remote gateway.
BAD_WINDOW = "InvalidArgument"


class Deliveries(Protocol):
    """Local (:class:`LocalDeliveries`) or remote
    (:class:`gateway.cli.admin_client.RemoteDeliveries`), the same document."""

    def replay(
        self, topic: str, subscription: str, since: str, until: str | None, dry_run: bool
    ) -> dict[str, Any]: ...


def run(args: argparse.Namespace, deliveries: Deliveries) -> int:
    """The replay on ``deliveries``, printed for people or as JSON."""
    from gateway.operator_documents.delivered_replays import describe

    try:
        done = deliveries.replay(
            args.topic, args.subscription, args.since, args.until, args.dry_run
        )
    except (MNSError, AdminError) as error:
        message = getattr(error, "message", str(error))
        if error.code == BAD_WINDOW:
            raise UsageError(message) from error
        raise CommandError(f"{args.topic}/{args.subscription}: {error.code}: {message}") from error
    emit(args, done, describe)
    return ExitCode.OK


class LocalDeliveries:
    """The replay on this machine's store, with this command's own request id (the operation
    gives a caller without one a new one) and the history kept as the settings say; each
    replayed delivery's ``Replay`` record is written by the gateway's delivery worker that
    pushes it."""

    def __init__(self, ops: Operations) -> None:
        self._ops = ops

    def replay(
        self, topic: str, subscription: str, since: str, until: str | None, dry_run: bool
    ) -> dict[str, Any]:
        from gateway.operations.calls import local_caller
        from gateway.operations.delivered_replays import replay_delivered_window
        from gateway.operator_documents.delivered_replays import document

        done = replay_delivered_window(
            self._ops, local_caller(), topic, subscription, since, until, dry_run=dry_run
        )
        return document(done)


def deliveries(args: argparse.Namespace) -> int:
    return on_operations(existing_settings, args, lambda ops: run(args, LocalDeliveries(ops)))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The action and its options, shared with ``admin deliveries``."""
    parser.add_argument(
        "action",
        choices=("replay",),
        help="replay: push again, with the same MessageIds and in publish order, every message "
        "delivered to the subscription in the window that the delivered history still keeps",
    )
    parser.add_argument("topic", help="the topic")
    parser.add_argument("subscription", help="the subscription")
    parser.add_argument(
        "--since",
        required=True,
        help="delivered at or after this time, ISO 8601 in UTC (2026-12-01T22:21:51Z)",
    )
    parser.add_argument("--until", help="and before this time (default: now)")
    parser.add_argument("--dry-run", action="store_true", help="only say how many would be queued")
    with_json(parser)


def add_command(commands: Commands) -> None:
    parser = commands.add_parser(
        "deliveries", help="push again what was delivered to a subscription in a window"
    )
    add_arguments(parser)
    with_data_dir(parser)
    parser.set_defaults(handler=deliveries)
