"""A database outage answered alike on every front end (issue 33 finding 13): the web console
shows a 503 ServiceUnavailable page with Retry-After, and the control plane answers 503
ServiceUnavailable with Retry-After, as the XML and JSON APIs do; none of them logs a traceback.
A real ``mns-gateway serve`` over a real PostgreSQL server, stopped and started again; the
console through headless Chromium."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.queue import QueueMeta
from selenium import webdriver

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET
from tests.faults.harness import assert_quiet_log, log_text, start_serve, until
from tests.gateway.api.console.browser import Pages
from tests.gateway.api.control.clients import Classic
from tests.postgres import PostgresServer, postgres_server

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture()
def database_server() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


def _console_get(port: int, path: str, cookie: str) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers={"Cookie": f"mns_console={cookie}"})
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def test_the_console_and_the_control_plane_answer_an_outage_with_503(
    database_server: PostgresServer, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    gateway = start_serve(
        tmp_path / "a", {"MNS_GATEWAY_DATABASE_URL": database_server.new_database()}
    )
    try:
        pages = Pages(browser, gateway.url, tmp_path, layout=False)
        pages.open("/console/queues")
        pages.submit(
            "form.narrow", access_key_id=ACCESS_KEY_ID, access_key_secret=ACCESS_KEY_SECRET
        )
        assert pages.driver.current_url.endswith("/console/queues")
        cookie = browser.get_cookie("mns_console")["value"]
        # The session was saved without waiting for the WAL flush (docs/console.md), and the
        # crash below could come before the flush: an acknowledged write flushes through it.
        Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue("jobs").create(QueueMeta())
        control = Classic(gateway.port)

        database_server.stop("immediate")
        pages.open("/console/queues/jobs")
        assert "503 ServiceUnavailable" in pages.text(), pages.text()
        assert "retry later" in pages.text()
        response = _console_get(gateway.port, "/console/queues", cookie)
        assert (response.status, response.getheader("Retry-After")) == (503, "1")
        assert response.getheader("Content-Security-Policy")
        # A visitor without a session: the sign-in page cannot keep its CSRF token either.
        response = _console_get(gateway.port, "/console/sign-in", "")
        assert (response.status, response.getheader("Retry-After")) == (503, "1")
        refused = control.error("ListQueue", {"PageNum": 1, "PageSize": 10})
        assert (refused.get_http_status(), refused.get_error_code()) == (503, "ServiceUnavailable")

        database_server.start()
        assert until(lambda: _console_get(gateway.port, "/console/", cookie).status == 200, 15)
        pages.open("/console/queues/jobs")
        assert "ServiceUnavailable" not in pages.text()
        assert control.common("ListQueue", {"PageNum": 1, "PageSize": 10})["Success"] is True
    finally:
        gateway.stop()
    assert_quiet_log(log_text(gateway.log_file))
