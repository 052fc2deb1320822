"""``mns-gateway``: serve the API with delivery workers, run workers alone, operate on the store."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from gateway.config import Settings, settings_from_env
from gateway.credentials import resolve_access_keys


def _settings(args: argparse.Namespace) -> Settings:
    return settings_from_env().with_overrides(
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        data_dir=Path(args.data_dir) if getattr(args, "data_dir", None) else None,
        workers=getattr(args, "workers", None),
        threads=getattr(args, "threads", None),
    )


def _serve(args: argparse.Namespace) -> int:
    from gateway.server import GatewayServer, announce_generated_keys

    settings = _settings(args)
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
    settings = _settings(args)
    if settings.pushes_on_greenlets:
        from gevent import monkey

        monkey.patch_all()
    from gateway.server import build_runtime

    runtime = build_runtime(settings, with_worker=True)
    if runtime.worker is None:
        print("MNS_GATEWAY_DELIVERY_THREADS is 0: nothing to run")
        return 1
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    runtime.worker.start()
    stop.wait()
    runtime.close()
    return 0


def _dead_letters(args: argparse.Namespace) -> int:
    from gateway.api.admin import dead_letter_detail, dead_letter_summary
    from gateway.server import open_store

    store = open_store(_settings(args))
    letters = store.deliveries
    try:
        if args.action == "list":
            page = letters.list_dead_letters(args.marker or "", args.limit, args.topic)
            result: object = {
                "DeadLetters": [dead_letter_summary(d) for d in page.items],
                "NextMarker": page.next_marker,
            }
        elif args.action == "show":
            result = dead_letter_detail(letters.get_dead_letter(args.id))
        else:
            result = {"Id": args.id, "DeliveryId": letters.replay_dead_letter(args.id)}
    finally:
        store.close()
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


def _migrate(args: argparse.Namespace) -> int:
    """Bring the database's schema up to date and exit: safe beside starting replicas, which
    migrate on start-up too, one process at a time."""
    from gateway.server import open_database
    from gateway.store.migrations import latest_version

    database = open_database(_settings(args), migrate=False)
    try:
        applied = database.migrate()
    finally:
        database.close()
    print(json.dumps({"Applied": applied, "SchemaVersion": latest_version()}))
    return 0


def _keys(args: argparse.Namespace) -> int:
    from gateway.server import open_database, open_keyring

    settings = _settings(args)
    database = open_database(settings)
    try:
        keyring = open_keyring(settings, database)
        key = keyring.rotate() if args.action == "rotate" else keyring.current
    finally:
        database.close()
    print(json.dumps({"CurrentKeyId": key.key_id}))
    return 0


def _credentials_issue(args: argparse.Namespace) -> int:
    """A temporary access key pair with its security token, kept in the store every replica
    reads (docs/protocol.md#temporary-credentials)."""
    from gateway.server import open_database
    from gateway.store.temporary_credentials import TemporaryCredentialStore

    database = open_database(_settings(args))
    try:
        credential = TemporaryCredentialStore(database, time.time).issue(args.ttl)
    finally:
        database.close()
    document = credential.document()
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print("\n".join(f"{name + ':':<17}{value}" for name, value in document.items()))
    return 0


def _ttl(text: str) -> int:
    from gateway.temporary_credentials import check_ttl

    try:
        ttl = int(text)
        check_ttl(ttl)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return ttl


def _with_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="where the SQLite database and keys live")


def _add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser("serve", help="run the MNS API and the delivery workers")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind (default 8080)")
    _with_data_dir(serve)
    serve.add_argument("--workers", type=int, help="gunicorn worker processes (default 1)")
    serve.add_argument("--threads", type=int, help="threads per worker (default 64)")
    serve.set_defaults(handler=_serve)

    worker = commands.add_parser("worker", help="run only the delivery workers")
    _with_data_dir(worker)
    worker.set_defaults(handler=_worker)

    letters = commands.add_parser("dead-letters", help="list, inspect and replay dead letters")
    letters.add_argument("action", choices=("list", "show", "replay"))
    letters.add_argument("id", nargs="?", help="dead letter id (show, replay)")
    letters.add_argument("--topic", help="only this topic's dead letters (list)")
    letters.add_argument("--marker", help="continue a listing from this id (list)")
    letters.add_argument("--limit", type=int, default=100)
    _with_data_dir(letters)
    letters.set_defaults(handler=_dead_letters)

    migrate = commands.add_parser("migrate", help="apply the database's schema migrations")
    _with_data_dir(migrate)
    migrate.set_defaults(handler=_migrate)

    keys = commands.add_parser("keys", help="show or rotate the push signing key")
    keys.add_argument("action", choices=("show", "rotate"))
    _with_data_dir(keys)
    keys.set_defaults(handler=_keys)

    credentials = commands.add_parser("credentials", help="the access keys clients sign with")
    credential_commands = credentials.add_subparsers(dest="credentials_command", required=True)
    issue = credential_commands.add_parser(
        "issue",
        help="issue temporary credentials: an access key pair and the security token it is "
        "valid with, until its Expiration",
    )
    issue.add_argument(
        "--ttl", type=_ttl, required=True, metavar="SECONDS", help="lifetime, 1 to 43200 seconds"
    )
    issue.add_argument("--json", action="store_true", help="print JSON, for scripts")
    _with_data_dir(issue)
    issue.set_defaults(handler=_credentials_issue)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mns-gateway", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    _add_commands(commands)
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
    if args.command == "dead-letters" and args.action != "list" and not args.id:
        parser.error(f"dead-letters {args.action} needs a dead letter id")
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
