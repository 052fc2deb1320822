"""The API while its database is unavailable: every request that needs it is answered within
the timeout with 503 ServiceUnavailable in MNS XML and a Retry-After, which the official SDK
raises as a server error carrying that code; ``/readyz`` fails, ``/healthz`` does not."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.mns_exception import MNSServerException
from mns.queue import Message
from werkzeug.serving import make_server

from gateway.api.app import create_app
from gateway.config.settings import Settings
from gateway.store.backends.postgres import PostgresDatabase
from gateway.store.base import Store, compose_store
from gateway.testing.process import free_port
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET
from tests.gateway.api.control.clients import Classic
from tests.mns_http import RawClient

TIMEOUT = 0.5
#: A timeout for the probe's test: a fifth of it (what ``/readyz`` waits) lies far enough from
#: the whole that a loaded machine cannot take one for the other.
PROBE_TIMEOUT = 5.0


@pytest.fixture()
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A store whose PostgreSQL server is not there (nothing listens on its port); its
    database's timeout is ``TIMEOUT`` unless a test passes another (``indirect``)."""
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    timeout = getattr(request, "param", TIMEOUT)
    store = compose_store(PostgresDatabase(url, migrate=False, pool_size=2, timeout=timeout))
    yield store
    store.close()


@pytest.fixture()
def raw(store: Store, tmp_path: Path) -> Iterator[RawClient]:
    # Without the console: it reads its session key from the database when the app is made,
    # and this database is down from the start (a gateway started so exits; docs/deploy.md).
    settings = Settings(data_dir=tmp_path, console=False)
    app = create_app(settings, store, {ACCESS_KEY_ID: ACCESS_KEY_SECRET})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield RawClient("127.0.0.1", server.server_port, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    server.shutdown()
    thread.join(timeout=10)


def test_requests_fail_fast_with_a_retriable_mns_error(raw: RawClient, store: Store) -> None:
    body = b"<Message><MessageBody>m</MessageBody></Message>"
    started = time.monotonic()
    response = raw.send("POST", "/queues/q/messages", body)
    assert time.monotonic() - started < TIMEOUT + 1.5
    assert (response.status, response.error_code()) == (503, "ServiceUnavailable")
    assert response.headers["Retry-After"] == "1"
    assert response.headers["Content-Type"].startswith("text/xml")
    assert raw.send("GET", "/topics/t").error_code() == "ServiceUnavailable"
    assert store.database.outage.down


def test_the_sdk_raises_the_code(raw: RawClient) -> None:
    account = Account(f"http://127.0.0.1:{raw.port}", ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    with pytest.raises(MNSServerException) as raised:
        account.get_queue("q").send_message(Message("m"))
    assert raised.value.type == "ServiceUnavailable"


@pytest.mark.parametrize("store", [PROBE_TIMEOUT], indirect=True)
def test_not_ready_but_alive(raw: RawClient) -> None:
    started = time.monotonic()
    assert raw.send("GET", "/readyz", sign_request=False).status == 503
    # It waits a fifth of the timeout (1 s), not the whole of it, as other requests do.
    assert time.monotonic() - started < PROBE_TIMEOUT
    assert raw.send("GET", "/healthz", sign_request=False).status == 200


def test_the_control_plane_answers_503_service_unavailable(raw: RawClient) -> None:
    """The same answer as the data API's (issue 33 finding 13), through the control-plane SDK."""
    refused = Classic(raw.port).error("ListQueue", {"PageNum": 1, "PageSize": 10})
    assert (refused.get_http_status(), refused.get_error_code()) == (503, "ServiceUnavailable")
