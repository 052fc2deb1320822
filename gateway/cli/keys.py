"""``mns-gateway keys show|rotate``: the push signing key in use, or a new one (with a shared
database, every replica follows). Neither makes a data dir: ``show`` on a directory with no
gateway data says so instead of generating a key there."""

from __future__ import annotations

import argparse

from gateway.cli.common import Commands, emit, existing_settings, with_data_dir, with_json
from gateway.errors import ExitCode


def keys(args: argparse.Namespace) -> int:
    from gateway.pushing.keyring import open_keyring
    from gateway.store.opening import open_database

    settings = existing_settings(args)
    database = open_database(settings)
    try:
        keyring = open_keyring(settings, database)
        key = keyring.rotate() if args.action == "rotate" else keyring.current
    finally:
        database.close()
    emit(args, {"CurrentKeyId": key.key_id}, lambda d: f"current signing key: {d['CurrentKeyId']}")
    return ExitCode.OK


def add_command(commands: Commands) -> None:
    parser = commands.add_parser("keys", help="show or rotate the push signing key")
    parser.add_argument(
        "action",
        choices=("show", "rotate"),
        help="show: the key pushes are signed with; rotate: a new one (old certificates stay "
        "served)",
    )
    with_data_dir(parser)
    with_json(parser)
    parser.set_defaults(handler=keys)
