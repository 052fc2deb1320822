"""``mns-gateway``: serve the API (with delivery workers), and the operator commands."""

from __future__ import annotations

import argparse
import logging
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mns-gateway", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the MNS API and the delivery workers")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind (default 8080)")
    serve.add_argument("--data-dir", help="where the SQLite database and keys live")
    serve.add_argument("--workers", type=int, help="gunicorn worker processes (default 1)")
    serve.add_argument("--threads", type=int, help="threads per worker (default 64)")
    serve.set_defaults(handler=_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = _parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
