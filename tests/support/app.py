"""The gateway's API in this process: its Flask app over the stub store (``MemoryDatabase``),
driven through Flask's test client, for the tests of request parsing and validation.

What is tested there is the application: which answer a request gets, and that a bad one stores
nothing. Neither the database backend nor the HTTP front changes that, so these tests run once,
in milliseconds, with no gateway process. What the front (``gateway.serving.http1``) does to raw
bytes (framing, chunked bodies, absolute-form targets) is tested against a real server.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest
from flask import Flask

from gateway.api.app import create_app
from gateway.config.settings import Settings
from gateway.store.backends.memory import MemoryDatabase
from gateway.store.base import Store, compose_store
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET
from tests.mns_http import RawClient, RawResponse, Transport


def flask_transport(app: Flask) -> Transport:
    """Requests through ``app``'s test client, their target passed on byte for byte (as the
    front's ``RAW_URI``: the signature covers it as sent)."""
    client = app.test_client()

    def send(
        method: str, uri: str, body: bytes, headers: dict[str, str], chunked: bool
    ) -> RawResponse:
        path, _, query = uri.partition("?")
        # Set apart from werkzeug's URL parsing, which reads "//queues" as a host name.
        environ: dict[str, object] = {
            "RAW_URI": uri,
            "REQUEST_URI": uri,
            "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
            "QUERY_STRING": query,
        }
        if chunked:  # a self-terminated body, as a server hands on a chunked one
            environ.update({"wsgi.input_terminated": True, "HTTP_TRANSFER_ENCODING": "chunked"})
            response = client.open(
                "/", method=method, input_stream=io.BytesIO(body), headers=headers,
                environ_overrides=environ,
            )  # fmt: skip
        else:
            response = client.open(
                "/", method=method, data=body, headers=headers, environ_overrides=environ
            )
        reason = response.status.partition(" ")[2]
        return RawResponse(response.status_code, dict(response.headers), response.data, reason)

    return send


def stub_app(data_dir: Path, **collaborators: object) -> tuple[Flask, Store]:
    """The app as ``mns-gateway serve`` builds it, over a fresh stub store."""
    settings = Settings(data_dir=data_dir)
    store = compose_store(MemoryDatabase(), region=settings.region, account_id=settings.account_id)
    app = create_app(settings, store, {ACCESS_KEY_ID: ACCESS_KEY_SECRET}, **collaborators)  # type: ignore[arg-type]
    return app, store


@pytest.fixture(name="raw")
def raw_on_the_app(tmp_path: Path) -> Iterator[RawClient]:
    """``raw``, in a module that imports this: a :class:`RawClient` for the app over a stub
    store of the test's own, instead of the gateway process's."""
    app, store = stub_app(tmp_path)
    transport = flask_transport(app)
    yield RawClient("localhost", 80, ACCESS_KEY_ID, ACCESS_KEY_SECRET, transport=transport)
    store.close()
