"""The web console at ``/console/`` (docs/console.md): server-rendered pages over the same store
operations the MNS API performs, signed in with an access key pair.

:func:`install_console` adds it to the gateway's Flask app; ``MNS_GATEWAY_CONSOLE=0`` leaves it
out.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from flask import Flask, Response
from jinja2 import BaseLoader, DictLoader, Environment

from gateway.api.console import (  # noqa: F401 - their views join the blueprint
    circuit_pages,
    dead_letter_pages,
    delivery_pages,
    display,
    pages,
    queue_pages,
    rate_limit_pages,
    standard_webhook_pages,
    topic_pages,
)
from gateway.api.console.security import SECURITY_HEADERS
from gateway.api.console.sessions import ConsoleSessionInterface
from gateway.api.console.web import ConsoleContext, blueprint, console_error_page
from gateway.api.context import current_request
from gateway.store import Store

#: The shared setting holding the key the sessions' secret fingerprints are made with.
SESSION_KEY_SETTING = "console_session_key"

__all__ = ["console_error_page", "install_console"]


def install_console(app: Flask, store: Store, clock: Callable[[], float]) -> None:
    """Serve the console from ``app``. Its sessions are kept in the store, so a session opened
    on one replica is valid on all of them and signing out ends it on all of them; the key
    their secret fingerprints are made with is in the store's shared settings, made by
    whichever replica starts first."""
    app.secret_key = store.shared_settings().get_or_create(
        SESSION_KEY_SETTING, secrets.token_urlsafe(48)
    )
    app.session_interface = ConsoleSessionInterface(store.console_sessions(clock))
    app.extensions["mns-console"] = ConsoleContext(
        reads=store.console_reads(), limiter=store.sign_in_attempts(clock)
    )
    app.register_blueprint(blueprint)
    app.jinja_env.loader = templates_in_memory(app.jinja_env)

    @app.after_request
    def console_headers(response: Response) -> Response:
        """Every answer under ``/console``, the ones no console view made included (an unknown
        method, an endpoint refusal), carries the console's headers."""
        path = current_request().path
        if path == "/console" or path.startswith("/console/"):
            response.headers.update(SECURITY_HEADERS)
        return response


def templates_in_memory(environment: Environment) -> BaseLoader:
    """Every template ``environment`` can load, read now and kept in memory.

    Jinja2 reads a template's file the first time a page uses it. Reinstalling the package into
    the virtualenv of a running gateway (``pip install .`` replaces the files) left its console
    rendering templates of another version beside its own code, or failing on a file that was
    gone for a moment; read at start, the pages stay those of the code that runs them. About
    thirty small files: a few milliseconds at start."""
    loader = environment.loader
    if loader is None:
        return DictLoader({})
    return DictLoader(
        {name: loader.get_source(environment, name)[0] for name in environment.list_templates()}
    )
