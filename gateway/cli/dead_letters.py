"""``mns-gateway dead-letters``: list, inspect and replay the dead letters of this data dir's or
database's gateway. ``mns-gateway admin dead-letters`` runs the same actions remotely
(:mod:`gateway.cli.admin`), with the same documents."""

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
from gateway.errors import ExitCode, GatewayError
from gateway.errors.commands import CommandError

if TYPE_CHECKING:
    from gateway.operations import Operations


#: A replay refused because the letter was replayed before, in the command line's words.
ALREADY_REPLAYED = (
    "it was replayed already; replay it again with --force to start another delivery of the message"
)


class DeadLetters(Protocol):
    """Local (:class:`LocalDeadLetters`) or remote
    (:class:`gateway.cli.admin_client.RemoteDeadLetters`), the same documents."""

    def listing(self, marker: str, limit: int, topic: str | None) -> dict[str, Any]: ...
    def detail(self, letter_id: str) -> dict[str, Any]: ...
    def replay(self, letter_id: str, force: bool = False) -> dict[str, Any]: ...


def run(args: argparse.Namespace, letters: DeadLetters) -> int:
    """One dead-letter action on ``letters``, printed for people or as JSON."""
    from gateway.operator_documents import dead_letters

    if args.action == "list":
        listing = letters.listing(args.marker or "", args.limit, args.topic)
        emit(args, listing, dead_letters.describe_listing)
        return ExitCode.OK
    try:
        if args.action == "show":
            emit(args, letters.detail(args.id), dead_letters.describe_detail)
        else:
            replayed = letters.replay(args.id, args.force)
            emit(args, replayed, lambda r: f"replayed {r['Id']} as delivery {r['DeliveryId']}")
    except GatewayError as error:
        message = getattr(error, "message", str(error))
        if getattr(error, "code", None) == "DeadLetterAlreadyReplayed":
            # The API's sentence says "with force" (its ?force=true); here it is the flag.
            message = ALREADY_REPLAYED
        raise CommandError(f"dead letter {args.id}: {message}") from error
    return ExitCode.OK


class LocalDeadLetters:
    """The dead-letter operations on this machine's store: a replay carries this command's own
    request id (the operation gives a caller without one a new one); its ``Replay`` record is
    written by the gateway's delivery worker that pushes it."""

    def __init__(self, ops: Operations) -> None:
        from gateway.operations.calls import local_caller

        self._ops = ops
        self._caller = local_caller()

    def listing(self, marker: str, limit: int, topic: str | None) -> dict[str, Any]:
        from gateway.operations.dead_letters import list_dead_letters
        from gateway.operator_documents.dead_letters import listing

        return listing(list_dead_letters(self._ops, self._caller, marker, limit, topic))

    def detail(self, letter_id: str) -> dict[str, Any]:
        from gateway.operations.dead_letters import get_dead_letter
        from gateway.operator_documents.dead_letters import detail

        return detail(get_dead_letter(self._ops, self._caller, letter_id))

    def replay(self, letter_id: str, force: bool = False) -> dict[str, Any]:
        from gateway.operations.dead_letters import replay_dead_letter
        from gateway.operator_documents.dead_letters import replayed

        delivery_id = replay_dead_letter(self._ops, self._caller, letter_id, force=force)
        return replayed(letter_id, delivery_id)


def dead_letters(args: argparse.Namespace) -> int:
    return on_operations(existing_settings, args, lambda ops: run(args, LocalDeadLetters(ops)))


def page_limit(text: str) -> int:
    """``--limit``: out of range is a usage error (``--limit 0`` listed nothing, said "no dead
    letters" and offered a marker while there were some)."""
    from gateway.operations.dead_letters import LIMITS
    from gateway.protocol.integers import integer_in_range

    limit = integer_in_range(text, *LIMITS)
    if limit is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number from {LIMITS[0]} to {LIMITS[1]}"
        )
    return limit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The actions and options, shared with ``admin dead-letters``."""
    parser.add_argument(
        "action",
        choices=("list", "show", "replay"),
        help="list: the dead letters, oldest first; show: one with every attempt; replay: "
        "deliver one again, same MessageId",
    )
    parser.add_argument("id", nargs="?", help="dead letter id (show, replay)")
    parser.add_argument("--topic", help="only this topic's dead letters (list)")
    parser.add_argument("--marker", help="continue a listing from this id (list)")
    parser.add_argument(
        "--limit",
        type=page_limit,
        default=100,
        help="at most this many, 1 to 1000 (list; default 100)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replay a dead letter replayed before: another delivery of the message (replay)",
    )
    with_json(parser)
    needed = ("id", "a dead letter id")
    parser.set_defaults(needs={"show": needed, "replay": needed})


def add_command(commands: Commands) -> None:
    parser = commands.add_parser(
        "dead-letters", help="list, show (inspect) and replay dead letters"
    )
    add_arguments(parser)
    with_data_dir(parser)
    parser.set_defaults(handler=dead_letters)
