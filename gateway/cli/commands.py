"""``mns-gateway``: serve the API with delivery workers, run workers alone, operate on the store.

Every command fails the way a tool should: one line on stderr naming what is wrong, and a
non-zero exit code; tracebacks are for bugs. Commands that print data print it for people
(times in ISO-8601 UTC) and, with ``--json``, as JSON for scripts.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gateway.auth.generated_keys import (
    announce_generated_keys,
    resolve_access_keys,
    stored_credentials,
)
from gateway.cli.common import emit, on_store, with_data_dir, with_json
from gateway.cli.inbox import add_inbox_command
from gateway.cli.queue_settings import add_queue_commands
from gateway.config.data_dir import prepare_data_dir
from gateway.config.settings import Settings, admin_access_key, settings_from_env
from gateway.protocol.errors import GatewayError

if TYPE_CHECKING:
    from gateway.store.base import Store


class CommandError(GatewayError):
    """A command cannot do what it was asked; its message is the one line the user sees."""


def _settings(args: argparse.Namespace) -> Settings:
    return settings_from_env().with_overrides(
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        data_dir=Path(args.data_dir) if getattr(args, "data_dir", None) else None,
        workers=getattr(args, "workers", None),
        threads=getattr(args, "threads", None),
    )


def _ready_settings(args: argparse.Namespace) -> Settings:
    """Settings for a command that uses the data dir, which must be usable."""
    settings = _settings(args)
    prepare_data_dir(settings.data_dir)
    return settings


def _serve(args: argparse.Namespace) -> int:
    from gateway.serving.gunicorn_app import GatewayServer, check_can_listen
    from gateway.serving.preflight import check_before_forking

    settings = _ready_settings(args)
    check_can_listen(settings.host, settings.port)
    check_before_forking(settings)
    if not settings.database_url:
        # Resolve (and print) generated credentials once, before gunicorn forks its workers.
        # With a shared database each worker does (whichever creates the pair prints it): the
        # arbiter must not load psycopg before gevent patches the workers.
        announce_generated_keys(resolve_access_keys(settings.access_keys, settings.data_dir)[1])
    print(
        f"mns-gateway listening on {settings.base_url} (data dir {settings.data_dir})", flush=True
    )
    GatewayServer(settings).run()
    return 0


def _worker(args: argparse.Namespace) -> int:
    """Delivery workers without the API, for deployments that scale the two apart.

    With the gevent worker class (the default, as for ``serve``) the push threads are greenlets
    on one event loop: a push spends its time signing and waiting on a socket, and OS threads
    contending for the GIL cost about 20 context switches and a sixth of the CPU per push.
    """
    settings = _ready_settings(args)
    if settings.pushes_on_greenlets:
        from gevent import monkey

        monkey.patch_all()
    from gateway.api.probes import parse_address, worker_probes
    from gateway.composition import build_runtime

    probes_at = args.probes or settings.worker_probes
    probe_address = parse_address(probes_at) if probes_at else None
    runtime = build_runtime(settings, with_worker=True)
    if runtime.worker is None:
        raise CommandError("MNS_GATEWAY_DELIVERY_THREADS is 0: nothing to run")
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        probes = worker_probes(runtime.worker, runtime.store, runtime.metrics, probe_address)
    except GatewayError:
        runtime.close()
        raise
    runtime.worker.start()
    stop.wait()
    runtime.close()  # pushes in flight get MNS_GATEWAY_GRACEFUL_TIMEOUT seconds to finish
    if probes is not None:
        probes.stop()
    return 0


class DeadLetters(Protocol):
    """Local (:class:`gateway.admin.dead_letters.LocalDeadLetters`) or remote, the same
    documents."""

    def listing(self, marker: str, limit: int, topic: str | None) -> dict[str, Any]: ...
    def detail(self, letter_id: str) -> dict[str, Any]: ...
    def replay(self, letter_id: str, force: bool = False) -> dict[str, Any]: ...


def _run_dead_letters(args: argparse.Namespace, letters: DeadLetters) -> int:
    from gateway.admin import dead_letters

    if args.action == "list":
        listing = letters.listing(args.marker or "", args.limit, args.topic)
        emit(args, listing, dead_letters.describe_listing)
        return 0
    try:
        if args.action == "show":
            emit(args, letters.detail(args.id), dead_letters.describe_detail)
        else:
            replayed = letters.replay(args.id, args.force)
            emit(args, replayed, lambda r: f"replayed {r['Id']} as delivery {r['DeliveryId']}")
    except GatewayError as error:
        message = getattr(error, "message", str(error))
        raise CommandError(f"dead letter {args.id}: {message}") from error
    return 0


def _dead_letters(args: argparse.Namespace) -> int:
    return on_store(_ready_settings, args, partial(_local_dead_letters, args))


def _local_dead_letters(args: argparse.Namespace, store: Store, settings: Settings) -> int:
    """The dead-letter commands on this data dir's or database's store; a replay's ``Replay``
    record is written by the gateway's delivery worker that pushes it."""
    from gateway.admin.dead_letters import LocalDeadLetters

    return _run_dead_letters(args, LocalDeadLetters(store.deliveries))


def _admin(args: argparse.Namespace) -> int:
    """``/admin/`` of a gateway elsewhere, with requests signed by the given access key."""
    from gateway.cli.admin_client import AdminClient, RemoteDeadLetters

    settings = _settings(args)
    env_key_id, env_secret = admin_access_key()
    key_id = args.access_key_id or env_key_id
    secret = args.access_key_secret or env_secret
    if not (key_id and secret):
        stored = stored_credentials(settings.data_dir) or {}
        key_id, secret = next(iter(stored.items()), (None, None))
    if not (key_id and secret):
        raise CommandError(
            "no access key: pass --access-key-id and --access-key-secret "
            "(or set MNS_GATEWAY_ACCESS_KEY_ID and MNS_GATEWAY_ACCESS_KEY_SECRET)"
        )
    client = AdminClient(args.url or settings.base_url, key_id, secret)
    return _run_dead_letters(args, RemoteDeadLetters(client))


def _database_settings(args: argparse.Namespace) -> Settings:
    """Settings for a command that opens the database: a SQLite one needs a usable data dir."""
    settings = _settings(args)
    if not settings.database_url:
        prepare_data_dir(settings.data_dir)
    return settings


def _migrate(args: argparse.Namespace) -> int:
    """Bring the database's schema up to date and exit: safe beside starting replicas, which
    migrate on start-up too, one process at a time."""
    from gateway.composition import open_database
    from gateway.store.sql.migrations import latest_version

    database = open_database(_database_settings(args), migrate=False)
    try:
        applied = database.migrate()
    finally:
        database.close()
    document = {"Applied": applied, "SchemaVersion": latest_version()}
    emit(args, document, lambda d: f"schema version {d['SchemaVersion']}, applied {d['Applied']}")
    return 0


def _keys(args: argparse.Namespace) -> int:
    """The signing key in use, or a new one (with a shared database, every replica follows)."""
    from gateway.composition import open_database, open_keyring

    settings = _database_settings(args)
    database = open_database(settings)
    try:
        keyring = open_keyring(settings, database)
        key = keyring.rotate() if args.action == "rotate" else keyring.current
    finally:
        database.close()
    emit(args, {"CurrentKeyId": key.key_id}, lambda d: f"current signing key: {d['CurrentKeyId']}")
    return 0


def _generated_credentials(settings: Settings) -> dict[str, str] | None:
    if not settings.database_url:
        return stored_credentials(settings.data_dir)
    from gateway.composition import open_database
    from gateway.store.shared import SharedSettings

    database = open_database(settings)
    try:
        return stored_credentials(settings.data_dir, SharedSettings(database))
    finally:
        database.close()


def _credentials_show(args: argparse.Namespace) -> int:
    """The access keys the gateway accepts: configured ones, else the pair it generated."""
    settings = _settings(args)
    keys = dict(settings.access_keys) or _generated_credentials(settings)
    if not keys:
        raise CommandError(
            f"no credentials yet in {settings.data_dir}: `mns-gateway serve` generates a pair "
            "on its first start (unless MNS_GATEWAY_ACCESS_KEY_ID is set)"
        )
    document = {"AccessKeys": [{"AccessKeyId": k, "AccessKeySecret": s} for k, s in keys.items()]}
    emit(
        args,
        document,
        lambda d: "\n".join(
            f"AccessKeyId:     {pair['AccessKeyId']}\nAccessKeySecret: {pair['AccessKeySecret']}"
            for pair in d["AccessKeys"]
        ),
    )
    return 0


def _credentials_issue(args: argparse.Namespace) -> int:
    """A temporary access key pair with its security token, kept in the store every replica
    reads (docs/protocol.md#temporary-credentials)."""
    from gateway.composition import open_database
    from gateway.store.temporary_credentials import TemporaryCredentialStore

    database = open_database(_database_settings(args))
    try:
        credential = TemporaryCredentialStore(database, time.time).issue(args.ttl)
    finally:
        database.close()
    emit(
        args,
        credential.document(),
        lambda d: "\n".join(f"{name + ':':<17}{value}" for name, value in d.items()),
    )
    return 0


def _ttl(text: str) -> int:
    from gateway.auth.temporary_credentials import check_ttl

    try:
        ttl = int(text)
        check_ttl(ttl)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return ttl


def _dead_letter_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "show", "replay"))
    parser.add_argument("id", nargs="?", help="dead letter id (show, replay)")
    parser.add_argument("--topic", help="only this topic's dead letters (list)")
    parser.add_argument("--marker", help="continue a listing from this id (list)")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument(
        "--force",
        action="store_true",
        help="replay a dead letter replayed before: another delivery of the message (replay)",
    )
    with_json(parser)


def _add_serving_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser("serve", help="run the MNS API and the delivery workers")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind (default 8080)")
    with_data_dir(serve)
    serve.add_argument("--workers", type=int, help="gunicorn worker processes (default 1)")
    serve.add_argument(
        "--threads",
        type=int,
        help="threads per worker with MNS_GATEWAY_WORKER_CLASS=gthread only (default 64); "
        "the default gevent worker class serves on greenlets and ignores it",
    )
    serve.set_defaults(handler=_serve)

    worker = commands.add_parser("worker", help="run only the delivery workers")
    with_data_dir(worker)
    worker.add_argument(
        "--probes",
        metavar="HOST:PORT",
        help="answer /healthz, /readyz and /metrics there (default MNS_GATEWAY_WORKER_PROBES; "
        "none when unset; port 0: any free port, printed)",
    )
    worker.set_defaults(handler=_worker)


def _add_dead_letter_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    letters = commands.add_parser("dead-letters", help="list, inspect and replay dead letters")
    _dead_letter_arguments(letters)
    with_data_dir(letters)
    letters.set_defaults(handler=_dead_letters)

    admin = commands.add_parser(
        "admin", help="the dead-letter commands against a gateway elsewhere, through /admin/"
    )
    admin.add_argument("--url", help="the gateway's URL (default MNS_GATEWAY_PUBLIC_URL)")
    admin.add_argument("--access-key-id", help="default MNS_GATEWAY_ACCESS_KEY_ID")
    admin.add_argument("--access-key-secret", help="default MNS_GATEWAY_ACCESS_KEY_SECRET")
    admin_commands = admin.add_subparsers(dest="admin_command", required=True)
    remote_letters = admin_commands.add_parser("dead-letters", help="as `mns-gateway dead-letters`")
    _dead_letter_arguments(remote_letters)
    admin.set_defaults(handler=_admin)


def _add_database_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    migrate = commands.add_parser(
        "migrate", help="apply the database's schema migrations and exit (safe beside replicas)"
    )
    with_data_dir(migrate)
    with_json(migrate)
    migrate.set_defaults(handler=_migrate)

    keys = commands.add_parser("keys", help="show or rotate the push signing key")
    keys.add_argument("action", choices=("show", "rotate"))
    with_data_dir(keys)
    with_json(keys)
    keys.set_defaults(handler=_keys)


def _add_credentials_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    credentials = commands.add_parser("credentials", help="the access keys clients sign with")
    credential_commands = credentials.add_subparsers(dest="credentials_command", required=True)
    show = credential_commands.add_parser(
        "show", help="print the access keys the gateway accepts (the generated pair, again)"
    )
    with_data_dir(show)
    with_json(show)
    show.set_defaults(handler=_credentials_show)
    issue = credential_commands.add_parser(
        "issue",
        help="issue temporary credentials: an access key pair and the security token it is "
        "valid with, until its Expiration",
    )
    issue.add_argument(
        "--ttl", type=_ttl, required=True, metavar="SECONDS", help="lifetime, 1 to 43200 seconds"
    )
    with_data_dir(issue)
    with_json(issue)
    issue.set_defaults(handler=_credentials_issue)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mns-gateway", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    _add_serving_commands(commands)
    _add_dead_letter_commands(commands)
    _add_database_commands(commands)
    add_queue_commands(commands, _database_settings)
    _add_credentials_commands(commands)
    add_inbox_command(commands, _database_settings)
    # Listed on every install: without the pipeline extra or Java it says so in one line.
    from gateway.pipeline.report import add_report_arguments, run_report

    report = commands.add_parser(
        "report", help="delivery reports from operation logs (needs the pipeline extra and Java)"
    )
    add_report_arguments(report)
    report.set_defaults(handler=run_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "action", None) in ("show", "replay") and hasattr(args, "id") and not args.id:
        parser.error(f"dead-letters {args.action} needs a dead letter id")
    return run_command(args.command, lambda: int(args.handler(args)))


def run_command(command: str, run: Callable[[], int]) -> int:
    """``run()``'s exit status; any failure is one line on stderr and status 1.

    The gateway's own errors (:class:`~gateway.protocol.errors.GatewayError`: settings, the
    database, the data dir, the signing key, ...) say what to fix; an OSError names the file or
    address; anything else is a bug, still reported in one line (with its type, for a report).
    """
    try:
        return run()
    except GatewayError as error:
        message = str(error)
    except OSError as error:
        where = f" {error.filename}" if error.filename else ""
        message = f"{error.strerror or error}{where}".strip()
    except Exception as error:  # a bug: the user still gets one line, not a traceback
        message = f"unexpected {type(error).__name__}: {error}"
    lines = message.strip().splitlines() or ["failed"]
    print(f"mns-gateway {command}: {lines[0]}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
