"""What every ``mns-gateway`` command shares: its ``--data-dir`` and ``--json`` options, how it
prints (JSON for scripts; text for people, times in ISO-8601 UTC), and the store it works on.

Commands are defined in :mod:`gateway.cli` and beside the concept they operate on
(:mod:`gateway.cli.queue_settings`, :mod:`gateway.cli.inbox`); this module imports nothing
heavy, because the command line is parsed before ``serve`` lets gevent patch anything.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from gateway.admin.text import iso_utc as iso_utc  # re-exported for the commands
from gateway.config.settings import Settings

if TYPE_CHECKING:
    from gateway.store.base import Store

#: The command line's settings (flags over the environment) for parsed arguments.
SettingsFor = Callable[[argparse.Namespace], Settings]
T = TypeVar("T")


def with_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="where the SQLite database and keys live")


def with_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON, for scripts")


def emit(args: argparse.Namespace, document: Any, text: Callable[[Any], str]) -> None:
    """Print ``document`` as JSON with ``--json``, else as ``text(document)``."""
    print(json.dumps(document, indent=2, ensure_ascii=False) if args.json else text(document))


def on_store(
    settings_for: SettingsFor, args: argparse.Namespace, work: Callable[[Store, Settings], T]
) -> T:
    """``work`` on the store of the command line's data dir or database, closed afterwards."""
    from gateway.composition import open_store  # the store only once a command runs

    settings = settings_for(args)
    store = open_store(settings)
    try:
        return work(store, settings)
    finally:
        store.close()
