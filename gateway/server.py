"""Assembling a running gateway: store, credentials and app from settings; gunicorn to serve it.

Gunicorn's gthread worker holds many idle keep-alive and long-poll connections per process
while the group-commit writer keeps SQLite writes from contending between those threads.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from gateway.app import create_app
from gateway.config import Settings
from gateway.credentials import resolve_access_keys
from gateway.store.base import Store
from gateway.store.sqlite import SQLiteDatabase

log = logging.getLogger(__name__)


def open_store(settings: Settings) -> Store:
    return Store(SQLiteDatabase(settings.database_path, synchronous=settings.sqlite_synchronous))


def announce_generated_keys(keys: dict[str, str] | None) -> None:
    """Print a freshly generated access key pair once, so a newcomer can configure a client."""
    if keys:
        for key_id, secret in keys.items():
            print(
                "Generated an access key pair (kept in the data dir; shown only this once):\n"
                f"  AccessKeyId:     {key_id}\n  AccessKeySecret: {secret}",
                file=sys.stderr,
                flush=True,
            )


def build_app(settings: Settings) -> Flask:
    """The WSGI app for one process: its own store connection and writer thread."""
    keys, generated = resolve_access_keys(settings.access_keys, settings.data_dir)
    announce_generated_keys(generated)
    return create_app(settings, open_store(settings), keys)


class GatewayServer(BaseApplication):  # type: ignore[misc]
    """gunicorn, configured from :class:`Settings` instead of a config file."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        options: dict[str, Any] = {
            "bind": f"{self.settings.host}:{self.settings.port}",
            "workers": self.settings.workers,
            "worker_class": "gthread",
            "threads": self.settings.threads,
            "keepalive": 75,
            "timeout": 60,
            "graceful_timeout": 10,
            "proc_name": "mns-gateway",
            # Several gateways may run on one host (tests, demos): no shared control socket.
            "control_socket_disable": True,
        }
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        return build_app(self.settings)
