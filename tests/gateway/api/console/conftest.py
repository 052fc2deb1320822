"""The console over a real store (SQLite and PostgreSQL in turn), driven through Flask's test
client; the browser tests start a real ``mns-gateway serve`` instead."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client import CollectorRegistry
from werkzeug.test import TestResponse

from gateway.api.app import create_app
from gateway.config.settings import Settings
from gateway.observability.oplog import JsonLinesOperationLog
from gateway.store.base import Store, compose_store
from tests.conftest import OpenDatabase
from tests.support.clock import Clock

KEY_ID = "console-key"
SECRET = "console-secret"
OTHER_ID = "other-key"
OTHER_SECRET = "other-secret"
T0 = 1_780_000_000.0
_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
@dataclass
class Console:
    """An app with the console, its store, clock and operation-log directory."""

    app: Flask
    store: Store
    clock: Clock
    oplog_dir: Path
    oplog: JsonLinesOperationLog
    client: FlaskClient = field(init=False)
    csrf: str | None = None

    def __post_init__(self) -> None:
        self.client = self.app.test_client()

    def token(self, page: str = "/console/sign-in") -> str:
        match = _TOKEN.search(self.client.get(page).text)
        assert match, f"no CSRF token on {page}"
        return match.group(1)

    def sign_in(self, key_id: str = KEY_ID, secret: str = SECRET) -> TestResponse:
        self.csrf = None  # a sign-in starts a session with a new token
        data = {"csrf_token": self.token(), "access_key_id": key_id, "access_key_secret": secret}
        return self.client.post("/console/sign-in", data=data)

    def post(self, path: str, **form: str) -> TestResponse:
        """A form submitted as the page would, with the session's CSRF token (read once per
        session from a page that shows no flashed messages)."""
        if self.csrf is None:
            self.csrf = self.token("/console/sign-in")
        return self.client.post(path, data={"csrf_token": self.csrf, **form})

    def flashes(self, page: str) -> str:
        return flash_text(self.client.get(page).text)

    def refused(self, path: str, **form: str) -> str:
        """A form the console refuses: its page comes back at once (no redirect) with the
        error's status; the page's messages."""
        response = self.post(path, **form)
        assert 400 <= response.status_code < 500, response.status_code
        return flash_text(response.text)

    def oplog_records(self) -> list[str]:
        self.oplog.close()
        return [
            line
            for path in sorted(self.oplog_dir.rglob("*.jsonl"))
            for line in path.read_text().splitlines()
        ]


def flash_text(page: str) -> str:
    return " ".join(re.findall(r'<p class="flash [a-z]+">(.*?)</p>', page))


def make_console(open_database: OpenDatabase, tmp_path: Path, **settings: object) -> Console:
    database = open_database()
    database.migrate()
    clock = Clock(T0)
    store = compose_store(database, clock)
    oplog_dir = tmp_path / "oplog"
    oplog = JsonLinesOperationLog(oplog_dir, registry=CollectorRegistry())
    app = create_app(
        Settings(data_dir=tmp_path, **settings),  # type: ignore[arg-type]
        store,
        {KEY_ID: SECRET, OTHER_ID: OTHER_SECRET},
        clock=clock,
        oplog=oplog,
    )
    # The overview's counts are refreshed in the request that finds them due, not on a thread
    # (gateway.store.console.ConsoleReads.background): the page shows them at once.
    if "mns-console" in app.extensions:  # not when the settings turn the console off
        app.extensions["mns-console"].reads.background = _run_now
    return Console(app, store, clock, oplog_dir, oplog)


def _run_now(work: Callable[[], object]) -> None:
    work()


@pytest.fixture()
def console(open_database: OpenDatabase, tmp_path: Path) -> Iterator[Console]:
    made = make_console(open_database, tmp_path)
    yield made
    made.oplog.close()


@pytest.fixture()
def signed_in(console: Console) -> Console:
    assert console.sign_in().status_code == 302
    return console
