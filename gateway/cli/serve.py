"""``mns-gateway serve``: the MNS API and the delivery workers, in gunicorn.

Everything the command was given is checked before anything is written or printed: the flags by
argparse (a usage error, status 2), the ``MNS_GATEWAY_*`` settings as they are read, then the
address and what a worker process would trip over (:mod:`gateway.serving.preflight`); each
failure is one line naming the option or the variable. Only then is the data dir prepared and,
with SQLite, locked for this gateway (a second ``serve`` on it is refused, naming the running
one), the served keys recorded and the addresses printed. Ctrl-C stops it at once (gunicorn's quick
shutdown; SIGTERM drains first), with status 0 and no traceback.
"""

from __future__ import annotations

import argparse
import sys

from gateway.auth.generated_keys import (
    announce_generated_keys,
    resolve_access_keys,
    stored_credentials,
)
from gateway.auth.served_keys import changed_keys_warning, record_served_keys
from gateway.cli.common import Commands, setting_type, settings_of, with_data_dir
from gateway.config.data_dir import lock_for_serving, prepare_data_dir
from gateway.config.settings import Settings
from gateway.errors import ExitCode

#: Where the web console is, under the gateway's URL (gateway.api.app.CONSOLE_PREFIX).
CONSOLE_PATH = "/console/"


def serve(args: argparse.Namespace) -> int:
    from gateway.serving.gunicorn_app import GatewayServer, check_can_listen
    from gateway.serving.preflight import check_before_forking

    settings = settings_of(args)
    check_can_listen(settings.host, settings.port)
    check_before_forking(settings)
    prepare_data_dir(settings.data_dir)
    if not settings.database_url:
        # Held until the process ends (the workers share it); replicas of a shared database
        # may share a data dir, as they share everything else.
        lock_for_serving(settings.data_dir, settings.base_url)
        # Resolve (and print) generated credentials once, before gunicorn forks its workers.
        # With a shared database each worker does (whichever creates the pair prints it): the
        # arbiter must not load psycopg before gevent patches the workers.
        keys, generated = resolve_access_keys(settings.access_keys, settings.data_dir)
        announce_generated_keys(generated)
        _record_keys(settings, keys)
    elif settings.access_keys:
        _record_keys(settings, settings.access_keys)
    print("\n".join(addresses(settings)), flush=True)
    GatewayServer(settings).run()
    return ExitCode.OK


def addresses(settings: Settings) -> list[str]:
    """What ``serve`` prints once its checks passed: where it listens (the bound address, which
    a log reader can find it at), the public URL when one is set apart from it, and the
    console's URL at the address people open it at."""
    bound = settings.bound_url
    lines = [f"mns-gateway serve: listening on {bound} (data dir {settings.data_dir})"]
    if settings.base_url != bound:
        lines.append(f"  public URL: {settings.base_url} (MNS_GATEWAY_PUBLIC_URL)")
    if settings.console:
        lines.append(f"  console:    {settings.base_url}{CONSOLE_PATH}")
    return lines


def _record_keys(settings: Settings, keys: dict[str, str]) -> None:
    """Keep the URL and key ids served with, for ``credentials show``; warn when clients set up
    for the previous start's keys will be refused now."""
    previous = record_served_keys(settings.data_dir, settings.base_url, keys)
    if previous is not None:
        generated = stored_credentials(settings.data_dir)
        print(changed_keys_warning(previous, keys, generated), file=sys.stderr, flush=True)


def add_command(commands: Commands) -> None:
    parser = commands.add_parser("serve", help="run the MNS API and the delivery workers")
    parser.add_argument(
        "--host", type=setting_type("host"), help="address to bind (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=setting_type("port"), help="port to bind, 1 to 65535 (default 8080)"
    )
    with_data_dir(parser)
    parser.add_argument(
        "--workers", type=setting_type("workers"), help="gunicorn worker processes (default 1)"
    )
    parser.add_argument(
        "--threads",
        type=setting_type("threads"),
        help="threads per worker with MNS_GATEWAY_WORKER_CLASS=gthread only (default 64); "
        "the default gevent worker class serves on greenlets and ignores it",
    )
    parser.set_defaults(handler=serve)
