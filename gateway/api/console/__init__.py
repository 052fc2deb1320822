"""The web console at ``/console/`` (docs/console.md): server-rendered pages over the same store
operations the MNS API performs, signed in with an access key pair.

:func:`install_console` adds it to the gateway's Flask app; ``MNS_GATEWAY_CONSOLE=0`` leaves it
out.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from flask import Flask

from gateway.api.console import (  # noqa: F401 - their views join the blueprint
    circuit_pages,
    dead_letter_pages,
    delivery_pages,
    pages,
    queue_pages,
    rate_limit_pages,
    topic_pages,
)
from gateway.api.console.security import ConsoleSessionInterface
from gateway.api.console.web import ConsoleContext, blueprint
from gateway.store.base import Store
from gateway.store.console import ConsoleReads
from gateway.store.shared import SharedSettings
from gateway.store.sign_in import SignInAttempts

#: The shared setting holding the key console sessions are signed with.
SESSION_KEY_SETTING = "console_session_key"


def install_console(app: Flask, store: Store, clock: Callable[[], float]) -> None:
    """Serve the console from ``app``. Its sessions are signed with a key kept in the store's
    shared settings, made by whichever replica starts first, so a session opened on one replica
    is valid on all of them."""
    app.secret_key = SharedSettings(store.database).get_or_create(
        SESSION_KEY_SETTING, secrets.token_urlsafe(48)
    )
    app.session_interface = ConsoleSessionInterface()
    app.extensions["mns-console"] = ConsoleContext(
        reads=ConsoleReads(store.database, store.clock),
        limiter=SignInAttempts(store.database, clock),
    )
    app.register_blueprint(blueprint)
