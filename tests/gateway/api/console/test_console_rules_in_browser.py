"""The console's rules as a person meets them (issue 33 findings 10-12): a real
``mns-gateway serve`` and headless Chromium. Signing out ends the session for every copy of its
cookie; ``DisableEndpoint`` turns the console away as it turns the API away; a mistyped console
address is the console's own page, and ``/console`` leads to it."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.queue import QueueMeta
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway, start_gateway
from tests.gateway.api.console.browser import Pages
from tests.gateway.api.control.clients import Classic

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    process = start_gateway(tmp_path_factory.mktemp("console-rules-gateway"))
    Account(process.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue("jobs").create(QueueMeta())
    yield process
    process.stop()


@pytest.fixture()
def pages(browser: webdriver.Chrome, gateway: RunningGateway, tmp_path: Path) -> Pages:
    browser.delete_all_cookies()
    return Pages(browser, gateway.url, tmp_path, layout=False)


def _sign_in(pages: Pages) -> None:
    pages.open("/console/queues")
    assert "/console/sign-in" in pages.driver.current_url
    pages.submit("form.narrow", access_key_id=ACCESS_KEY_ID, access_key_secret=ACCESS_KEY_SECRET)
    assert pages.driver.current_url.endswith("/console/queues")


def test_a_copy_of_the_cookie_is_worthless_after_sign_out(pages: Pages) -> None:
    _sign_in(pages)
    cookie = pages.driver.get_cookie("mns_console")
    assert cookie is not None
    # A random id, nothing made from the secret.
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", cookie["value"]), cookie["value"]
    pages.submit("form.signout")
    pages.open("/console/")
    assert "/console/sign-in" in pages.driver.current_url
    # The copy taken before signing out, put back: still signed out, pages and forms alike.
    pages.driver.add_cookie({k: cookie[k] for k in ("name", "value", "path")})
    pages.open("/console/queues/jobs")
    assert "/console/sign-in" in pages.driver.current_url
    assert "Sign in" in pages.text()


def test_a_disabled_endpoint_turns_the_console_away(pages: Pages, gateway: RunningGateway) -> None:
    _sign_in(pages)
    control = Classic(gateway.port)
    control.common("DisableEndpoint", {"EndpointType": "public"})
    try:
        time.sleep(1.1)  # a replica trusts the endpoint state it read for a second
        pages.open("/console/queues/jobs")
        assert "AccessDenied" in pages.text()
        assert pages.driver.find_elements(By.CSS_SELECTOR, "form[action$='/send']") == []
    finally:
        control.common("EnableEndpoint", {"EndpointType": "public"})
    time.sleep(1.1)
    pages.open("/console/queues/jobs")
    assert "AccessDenied" not in pages.text()


def test_console_addresses_lead_to_console_pages(pages: Pages, gateway: RunningGateway) -> None:
    _sign_in(pages)
    pages.open("/console")
    assert pages.driver.current_url == gateway.url + "/console/"
    pages.open("/console/no-such-page")
    assert "404" in pages.text() or "Not Found" in pages.text()
    assert pages.driver.find_elements(By.CSS_SELECTOR, "link[rel=stylesheet]")
