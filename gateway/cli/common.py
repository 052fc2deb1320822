"""What every ``mns-gateway`` command shares: its ``--data-dir`` and ``--json`` options, how it
prints (JSON for scripts; text for people, times in ISO-8601 UTC), and the store it works on.

Each command group is a module of :mod:`gateway.cli` with an ``add_command(commands)``;
:mod:`gateway.cli.commands` assembles them. This module imports nothing heavy, because the
command line is parsed before ``serve`` lets gevent patch anything.

A command that works on a gateway's data never creates that data: a data dir without the
gateway's database is one line naming it and ``--data-dir`` (:func:`existing_settings`). Only
``serve``, ``worker`` and ``migrate`` make a data dir.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gateway.config.data_dir import prepare_data_dir
from gateway.config.settings import Settings, read_value, settings_from_env
from gateway.errors.commands import CommandError
from gateway.operator_documents.times import iso_utc as iso_utc  # re-exported for the commands

if TYPE_CHECKING:
    from gateway.operations import Operations
    from gateway.store import Store

#: The command line's settings (flags over the environment) for parsed arguments.
SettingsFor = Callable[[argparse.Namespace], Settings]
#: What ``add_parser`` is called on: the ``mns-gateway`` sub-commands.
Commands = argparse._SubParsersAction  # type: ignore[type-arg]
T = TypeVar("T")


def with_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        help="the gateway's data dir: SQLite database, keys (default MNS_GATEWAY_DATA_DIR, "
        "else ./mns-data)",
    )


def setting_type(name: str) -> Callable[[str], Any]:
    """An argparse ``type`` for a flag that sets the setting ``name``: read and checked by the
    same rule as its ``MNS_GATEWAY_*`` variable, a usage error naming the flag otherwise."""

    def read(text: str) -> Any:
        try:
            return read_value(name, text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{text!r} is not valid: {error}") from None

    return read


def settings_of(args: argparse.Namespace) -> Settings:
    """The command line's settings: its flags over ``MNS_GATEWAY_*`` over the defaults."""
    return settings_from_env().with_overrides(
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        data_dir=Path(args.data_dir) if getattr(args, "data_dir", None) else None,
        workers=getattr(args, "workers", None),
        threads=getattr(args, "threads", None),
    )


def ready_settings(args: argparse.Namespace) -> Settings:
    """Settings for a command that makes the data dir (serve, worker), which must be usable."""
    settings = settings_of(args)
    prepare_data_dir(settings.data_dir)
    return settings


def database_settings(args: argparse.Namespace) -> Settings:
    """Settings for ``migrate``: a SQLite database is made in a usable data dir."""
    settings = settings_of(args)
    if not settings.database_url:
        prepare_data_dir(settings.data_dir)
    return settings


def existing_settings(args: argparse.Namespace) -> Settings:
    """Settings for a command on a gateway's data: with SQLite, its database must be there
    already (run from the wrong directory, a command must not start an empty gateway)."""
    settings = settings_of(args)
    if not settings.database_url and not settings.database_path.is_file():
        raise CommandError(missing_data_dir(settings))
    return settings


def missing_data_dir(settings: Settings) -> str:
    return (
        f"no gateway data in {settings.data_dir.absolute()} "
        f"(no {settings.database_path.name} there): pass --data-dir, the directory "
        "`mns-gateway serve` uses (or set MNS_GATEWAY_DATA_DIR)"
    )


def does_not_exist(kind: str, name: str) -> CommandError:
    """A queue, topic or subscription that is not there, worded the same by every command
    ("queue jobs does not exist"): ``queues show`` said the API's sentence and ``queues delete``
    its own."""
    return CommandError(f"{kind} {name} does not exist")


def with_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print JSON for scripts (times in epoch ms)"
    )


def emit(args: argparse.Namespace, document: Any, text: Callable[[Any], str]) -> None:
    """Print ``document`` as JSON with ``--json``, else as ``text(document)``."""
    print(json.dumps(document, indent=2, ensure_ascii=False) if args.json else text(document))


def on_store(
    settings_for: SettingsFor, args: argparse.Namespace, work: Callable[[Store, Settings], T]
) -> T:
    """``work`` on the store of the command line's data dir or database, closed afterwards."""
    from gateway.store.opening import open_store  # the store only once a command runs

    settings = settings_for(args)
    store = open_store(settings)
    try:
        return work(store, settings)
    finally:
        store.close()


def on_operations(
    settings_for: SettingsFor, args: argparse.Namespace, work: Callable[[Operations], T]
) -> T:
    """``work`` on the operation layer over the command line's store, closed afterwards. A
    command has no hooks of its own: the delivery worker that pushes what it asked for writes
    the operation-log records, in the gateway's process."""
    from gateway.operations.standard import standard_operations

    def over(store: Store, settings: Settings) -> T:
        # The store is opened as every process opens it (store/opening.py): an override's
        # transition is an operator event on the events topic from here too.
        return work(standard_operations(settings, store))

    return on_store(settings_for, args, over)
