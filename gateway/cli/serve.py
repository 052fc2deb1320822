"""``mns-gateway serve``: the MNS API and the delivery workers, in gunicorn."""

from __future__ import annotations

import argparse
import sys

from gateway.auth.generated_keys import announce_generated_keys, resolve_access_keys
from gateway.auth.served_keys import changed_keys_warning, record_served_keys
from gateway.cli.common import Commands, ready_settings, with_data_dir
from gateway.config.settings import Settings


def serve(args: argparse.Namespace) -> int:
    from gateway.serving.gunicorn_app import GatewayServer, check_can_listen
    from gateway.serving.preflight import check_before_forking

    settings = ready_settings(args)
    check_can_listen(settings.host, settings.port)
    check_before_forking(settings)
    if not settings.database_url:
        # Resolve (and print) generated credentials once, before gunicorn forks its workers.
        # With a shared database each worker does (whichever creates the pair prints it): the
        # arbiter must not load psycopg before gevent patches the workers.
        keys, generated = resolve_access_keys(settings.access_keys, settings.data_dir)
        announce_generated_keys(generated)
        _record_keys(settings, keys)
    elif settings.access_keys:
        _record_keys(settings, settings.access_keys)
    print(
        f"mns-gateway listening on {settings.base_url} (data dir {settings.data_dir})", flush=True
    )
    GatewayServer(settings).run()
    return 0


def _record_keys(settings: Settings, keys: dict[str, str]) -> None:
    """Keep the URL and key ids served with, for ``credentials show``; warn when clients set up
    for the previous start's keys will be refused now."""
    previous = record_served_keys(settings.data_dir, settings.base_url, keys)
    if previous is not None:
        print(changed_keys_warning(previous, keys), file=sys.stderr, flush=True)


def add_command(commands: Commands) -> None:
    parser = commands.add_parser("serve", help="run the MNS API and the delivery workers")
    parser.add_argument("--host", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to bind (default 8080)")
    with_data_dir(parser)
    parser.add_argument("--workers", type=int, help="gunicorn worker processes (default 1)")
    parser.add_argument(
        "--threads",
        type=int,
        help="threads per worker with MNS_GATEWAY_WORKER_CLASS=gthread only (default 64); "
        "the default gevent worker class serves on greenlets and ignores it",
    )
    parser.set_defaults(handler=serve)
