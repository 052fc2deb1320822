"""``mns-gateway migrate``: bring the database's schema up to date and exit."""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli.common import Commands, database_settings, emit, with_data_dir, with_json
from gateway.errors import ExitCode


def migrate(args: argparse.Namespace) -> int:
    """Safe beside starting replicas, which migrate on start-up too, one process at a time."""
    from gateway.store.opening import latest_schema_version, open_database

    database = open_database(database_settings(args), migrate=False)
    try:
        applied = database.migrate()
    finally:
        database.close()
    emit(args, {"Applied": applied, "SchemaVersion": latest_schema_version()}, describe)
    return ExitCode.OK


def describe(document: dict[str, Any]) -> str:
    applied = document["Applied"]
    if not applied:
        return f"schema version {document['SchemaVersion']}: already up to date"
    versions = ", ".join(map(str, applied))
    return f"schema version {document['SchemaVersion']}: applied migrations {versions}"


def add_command(commands: Commands) -> None:
    parser = commands.add_parser(
        "migrate", help="apply the database's schema migrations and exit (safe beside replicas)"
    )
    with_data_dir(parser)
    with_json(parser)
    parser.set_defaults(handler=migrate)
