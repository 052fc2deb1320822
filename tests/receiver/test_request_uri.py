"""The signed resource is the URI as sent: under prefixes, mounts, proxies and a real server."""

from __future__ import annotations

import dataclasses
import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from werkzeug.exceptions import NotFound
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.serving import make_server
from werkzeug.test import Client

from receiver.blueprint import request_uri_as_sent
from receiver.testing import (
    SignedRequest,
    SigningIdentity,
    post_notification,
    sign_notification,
)
from tests.support.clock import Clock

from .conftest import AppFactory, Recorder


def wsgi(text: str) -> str:
    """How a WSGI server hands over non-ASCII: UTF-8 bytes decoded as latin-1 (PEP 3333)."""
    return text.encode("utf-8").decode("latin-1")


class TestRequestURIAsSent:
    @pytest.mark.parametrize(
        ("environ", "expected"),
        [
            ({"RAW_URI": "/a%2Fb/n?x=%20&y"}, "/a%2Fb/n?x=%20&y"),
            ({"REQUEST_URI": "/a%2Fb/n?x=1"}, "/a%2Fb/n?x=1"),
            ({"RAW_URI": "/raw", "REQUEST_URI": "/other"}, "/raw"),
            ({"RAW_URI": "http://host:80/n?q=1"}, "/n?q=1"),
            ({"RAW_URI": "/svc/n", "SCRIPT_NAME": "/svc"}, "/svc/n"),
            ({"RAW_URI": "/svc", "SCRIPT_NAME": "/svc"}, "/svc"),
            ({"RAW_URI": "/n?q", "SCRIPT_NAME": "/public"}, "/public/n?q"),
            ({"RAW_URI": "/svcx/n", "SCRIPT_NAME": "/svc"}, "/svc/svcx/n"),
            ({"RAW_URI": "/caf%C3%A9/n", "SCRIPT_NAME": wsgi("/café")}, "/caf%C3%A9/n"),
            (
                {"SCRIPT_NAME": "/a b", "PATH_INFO": "/c:d@e", "QUERY_STRING": "x=%2F"},
                "/a%20b/c:d@e?x=%2F",
            ),
            ({"PATH_INFO": wsgi("/é")}, "/%C3%A9"),
            ({"PATH_INFO": "/n"}, "/n"),
        ],
        ids=[
            "raw", "request-uri", "raw-first", "absolute-form", "script-kept", "script-only",
            "prefix-restored", "segment-boundary", "utf8-script", "rebuilt", "rebuilt-utf8",
            "no-query",
        ],
    )  # fmt: skip
    def test_environ(self, environ: dict[str, str], expected: str) -> None:
        assert request_uri_as_sent(environ) == expected


@pytest.fixture
def accepting(make_app: AppFactory) -> AppFactory:
    def build(**options: object):  # type: ignore[no-untyped-def]
        app, receiver = make_app(**options)
        receiver.handler()(Recorder())
        return app

    return build


def sign(identity: SigningIdentity, clock: Clock, path: str):  # type: ignore[no-untyped-def]
    return sign_notification(identity, path=path, date=clock.now)


class TestPrefixes:
    def test_any_blueprint_prefix(
        self, accepting: AppFactory, identity: SigningIdentity, clock: Clock
    ) -> None:
        app = accepting(url_prefix="/hooks/a b")
        signed = sign(identity, clock, "/hooks/a%20b/notifications?tenant=x%2Fy")
        assert post_notification(app.test_client(), signed).status_code == 204

    def test_a_signature_over_the_decoded_path_does_not_verify(
        self, accepting: AppFactory, identity: SigningIdentity, clock: Clock
    ) -> None:
        app = accepting(url_prefix="/hooks/a b")
        signed = sign(identity, clock, "/hooks/a b/notifications")
        sent = dataclasses.replace(signed, path="/hooks/a%20b/notifications")
        assert post_notification(app.test_client(), sent).status_code == 403

    def test_custom_rule(
        self, accepting: AppFactory, identity: SigningIdentity, clock: Clock
    ) -> None:
        app = accepting(rule="/mns/push")
        assert (
            post_notification(app.test_client(), sign(identity, clock, "/mns/push")).status_code
            == 204
        )

    def test_mounted_under_a_script_name(
        self, accepting: AppFactory, identity: SigningIdentity, clock: Clock
    ) -> None:
        app: Flask = accepting()
        mounted = DispatcherMiddleware(NotFound(), {"/svc": app.wsgi_app})
        signed = sign(identity, clock, "/svc/notifications")
        assert post_notification(Client(mounted), signed).status_code == 204

    def test_behind_a_proxy_that_strips_a_prefix(
        self, accepting: AppFactory, identity: SigningIdentity, clock: Clock
    ) -> None:
        """The sender signed /public/notifications; the proxy forwards /notifications."""
        app: Flask = accepting()
        app.wsgi_app = ProxyFix(app.wsgi_app, x_prefix=1)  # type: ignore[method-assign]
        signed = sign(identity, clock, "/public/notifications")
        forwarded = dataclasses.replace(signed, path="/notifications")
        proxied = forwarded.replace_headers({"X-Forwarded-Prefix": "/public"})
        assert post_notification(app.test_client(), proxied).status_code == 204
        assert post_notification(app.test_client(), forwarded).status_code == 403


@pytest.fixture
def live_server(accepting: AppFactory) -> Iterator[int]:
    """The app under werkzeug's real HTTP server on 127.0.0.1."""
    server = make_server(
        "127.0.0.1", 0, accepting(url_prefix="/hooks/a b", max_body_bytes=2000), threaded=True
    )
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.server_port
    server.shutdown()
    thread.join(timeout=5)


def post_over_http(port: int, signed: SignedRequest, *, chunked: bool = False) -> int:
    """POST ``signed`` to 127.0.0.1:``port`` over a real socket; chunked without a length."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = iter([signed.body]) if chunked else signed.body
    try:
        connection.request(
            "POST", signed.path, body=body, headers=dict(signed.headers), encode_chunked=chunked
        )
        return connection.getresponse().status
    finally:
        connection.close()


class TestRealServer:
    def test_percent_encoded_path_and_query_over_http(
        self, live_server: int, identity: SigningIdentity, clock: Clock
    ) -> None:
        # %61 is "a": a rebuilt URI would say "a", but the sender signed "%61".
        signed = sign(identity, clock, "/hooks/%61%20b/notifications?x=%2F&y=%e2%82%ac")
        assert post_over_http(live_server, signed) == 204

    def test_chunked_bodies_are_capped_too(
        self, live_server: int, identity: SigningIdentity, clock: Clock
    ) -> None:
        path = "/hooks/a%20b/notifications"
        for size, expected in ((100, 204), (5000, 403)):
            signed = sign_notification(
                identity, "x" * size, format="SIMPLIFIED", path=path, date=clock.now
            )
            assert post_over_http(live_server, signed, chunked=True) == expected


@pytest.fixture(scope="module")
def gunicorn_port(
    identity: SigningIdentity, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[int]:
    """tests/receiver/gunicorn_app.py under a real gunicorn, the production server."""
    pem = tmp_path_factory.mktemp("gunicorn") / "cert.pem"
    pem.write_bytes(identity.certificate_pem)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "RECEIVER_TEST_PEM": str(pem), "RECEIVER_TEST_CERT_URL": identity.cert_url}
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--chdir", str(root), "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--log-level", "warning", "tests.receiver.gunicorn_app:create_app()"],
        env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # bounded: until gunicorn listens, at most 20 s
            assert process.poll() is None, "gunicorn exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_percent_encoded_path_and_query_under_gunicorn(
    gunicorn_port: int, identity: SigningIdentity
) -> None:
    signed = sign_notification(identity, path="/hooks/%61%20b/notifications?x=%2F&y=%e2%82%ac")
    assert post_over_http(gunicorn_port, signed) == 204
