"""``mns-gateway``: serve the API with delivery workers, run workers alone, operate on the store."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
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
    # Resolve (and print) generated credentials once, before gunicorn forks its workers.
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
    try:
        if args.action == "list":
            page = store.list_dead_letters(args.marker or "", args.limit, args.topic)
            result: object = {
                "DeadLetters": [dead_letter_summary(d) for d in page.items],
                "NextMarker": page.next_marker,
            }
        elif args.action == "show":
            result = dead_letter_detail(store.get_dead_letter(args.id))
        else:
            result = {"Id": args.id, "DeliveryId": store.replay_dead_letter(args.id)}
    finally:
        store.close()
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


def _keys(args: argparse.Namespace) -> int:
    from gateway.server import open_keyring

    keyring = open_keyring(_settings(args))
    key = keyring.rotate() if args.action == "rotate" else keyring.current
    print(json.dumps({"CurrentKeyId": key.key_id}))
    return 0


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

    keys = commands.add_parser("keys", help="show or rotate the push signing key")
    keys.add_argument("action", choices=("show", "rotate"))
    _with_data_dir(keys)
    keys.set_defaults(handler=_keys)


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
