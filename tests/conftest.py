"""Fixtures shared by every test package: a real gateway process started the way users start it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from gateway.store.backends.database import Database
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.testing.process import GatewayProcess, free_port  # noqa: F401 - for test modules
from tests.mns_http import RawClient
from tests.postgres import PostgresServer, postgres_server
from tests.support import markers

#: The toolbox's fixtures, for every test package (tests/support).
pytest_plugins = ["tests.support.clock", "tests.support.stub", "tests.chromium"]

ACCESS_KEY_ID = "test-key-id"
ACCESS_KEY_SECRET = "test-key-secret"
#: Retries a hundred times sooner, and pushes and leases that give up quickly.
FAST_RETRIES = {
    "MNS_GATEWAY_RETRY_SCALE": "0.01",
    "MNS_GATEWAY_PUSH_TIMEOUT": "0.5",
    "MNS_GATEWAY_LEASE_SECONDS": "2",
}


class RunningGateway(GatewayProcess):
    """A gateway process started by :func:`start_gateway`, with a raw client for it."""

    def raw(self) -> RawClient:
        return RawClient("127.0.0.1", self.port, ACCESS_KEY_ID, ACCESS_KEY_SECRET)

    def account(self) -> Any:
        """An official-SDK ``mns.account.Account`` for it."""
        from mns.account import Account

        return Account(self.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)


def wait_until_ready(port: int, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """For gateways started by other means (gunicorn itself); see ``GatewayProcess``."""
    RunningGateway(process, port, Path(), {}).wait_until_ready(timeout)


def start_gateway(
    data_dir: Path,
    extra_env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    port: int | None = None,
) -> RunningGateway:
    """``mns-gateway serve`` in a subprocess, exactly as the README starts it (the pytest
    plugin's own machinery: :class:`gateway.testing.process.GatewayProcess`)."""
    env = {
        **os.environ,
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        "MNS_GATEWAY_RETRY_SCALE": "0.01",
        **(extra_env or {}),
    }
    log_file = data_dir.parent / f"{data_dir.name}.gateway.log"
    return RunningGateway.start(data_dir, env, args=args, port=port, log_file=log_file)


def gateway_fixture(
    name: str,
    settings: Mapping[str, str] | None = None,
    *,
    oplog: bool = False,
    scope: Literal["session", "package", "module", "class"] = "module",
) -> Any:
    """The one way a test module gets a gateway of its own: a fixture (module-scoped unless
    said) starting ``mns-gateway serve`` with ``settings`` in a fresh data dir named ``name``
    and stopping it afterwards; ``oplog`` writes its operation log to a directory of its own
    (``MNS_GATEWAY_LOG_DIR``). ``gateway = gateway_fixture("pushes", FAST_RETRIES)``."""

    @pytest.fixture(scope=scope)
    def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
        env = dict(settings or {})
        if oplog:
            env["MNS_GATEWAY_LOG_DIR"] = str(tmp_path_factory.mktemp(f"{name}-oplogs"))
        running = start_gateway(tmp_path_factory.mktemp(name), env)
        yield running
        running.stop()

    return gateway


class GatewayPool:
    """Gateways kept for the whole session, each started when first asked for.

    A session-scoped fixture parametrized on the backend is finalized each time the tests
    switch backend, so each module on each backend started its own gateway again (23 times
    each on PostgreSQL for the API's and the control plane's, 2026-12-02): held here, the
    parametrized fixture only picks one, and a switch costs nothing."""

    def __init__(
        self, tmp_path_factory: pytest.TempPathFactory, postgres: Callable[[], PostgresServer]
    ) -> None:
        self._tmp = tmp_path_factory
        self._postgres = postgres
        self._running: dict[str, RunningGateway] = {}

    def get(
        self, name: str, backend: str, settings: Mapping[str, str] | None = None
    ) -> RunningGateway:
        """The gateway ``name`` on ``backend`` (a database of its own on the session's
        PostgreSQL), started with ``settings`` if it is not running yet."""
        key = f"{name}-{backend}"
        if key not in self._running:
            env = dict(settings or {})
            if backend == "postgresql":
                env["MNS_GATEWAY_DATABASE_URL"] = self._postgres().new_database()
            self._running[key] = start_gateway(self._tmp.mktemp(key), env)
        return self._running[key]

    def stop(self) -> None:
        """Stop them all, side by side (each graceful stop waits on its own timers)."""
        for gateway in self._running.values():
            gateway.terminate()
        for gateway in self._running.values():
            gateway.stop()
        self._running.clear()


@pytest.fixture(scope="session")
def gateway_pool(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayPool]:
    # The server is asked for through this fixture's own request, so that pytest stops the
    # pool's gateways before it stops the server.
    pool = GatewayPool(tmp_path_factory, lambda: request.getfixturevalue("postgres"))
    yield pool
    pool.stop()


@pytest.fixture(scope="session")
def gateway_process(gateway_pool: GatewayPool) -> RunningGateway:
    """The session's gateway on SQLite, shared by every test that needs only some gateway (the
    API's tests use it and its PostgreSQL twin: tests/gateway/api/conftest.py)."""
    return gateway_pool.get("gateway", "sqlite")


@pytest.fixture()
def served_raw(gateway_process: RunningGateway) -> RawClient:
    """A raw client of the gateway process: named apart from ``raw`` for the few tests, in
    modules whose ``raw`` is the app in this process (tests/support/app.py), of what the HTTP
    front does to a request's bytes."""
    return gateway_process.raw()


@pytest.fixture()
def raw(served_raw: RawClient) -> RawClient:
    return served_raw


@pytest.fixture()
def account(gateway_process: RunningGateway):  # type: ignore[no-untyped-def]
    return gateway_process.account()


_counter = iter(range(1, 10**9))


@pytest.fixture()
def unique() -> str:
    """A fresh name prefix, so tests sharing the session gateway never collide."""
    return f"t{os.getpid()}x{next(_counter)}"


#: The database backends the store and API tests run against. CI runs both; a developer without
#: PostgreSQL may set ``MNS_PUSH_TEST_BACKENDS=sqlite`` (a missing server otherwise fails). Not
#: an ``MNS_GATEWAY_*`` name: the gateways the tests start inherit the environment, and refuse
#: a variable of theirs that is no setting. The old name is still read, and kept from them.
BACKENDS = [
    name.strip()
    for name in (
        os.environ.get("MNS_PUSH_TEST_BACKENDS")
        or os.environ.pop("MNS_GATEWAY_TEST_BACKENDS", None)
        or "sqlite,postgresql"
    ).split(",")
    if name.strip()
]


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL 15 server for the session, started from the machine's binaries."""
    with postgres_server() as server:
        yield server


OpenDatabase = Callable[[], Database]


@pytest.fixture(params=BACKENDS)
def open_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenDatabase]:
    """Opens another connection to this test's own database, on each backend in turn (a second
    call stands in for a second process or replica). On PostgreSQL the database starts with
    the schema applied, as the first open leaves it (tests/postgres.py)."""
    opened: list[Database] = []
    if request.param == "sqlite":
        path = tmp_path / "db.sqlite3"

        def factory() -> Database:
            return SQLiteDatabase(path, synchronous="NORMAL")

    else:
        from gateway.store.backends.postgres import PostgresDatabase

        url = request.getfixturevalue("postgres").migrated_database()

        def factory() -> Database:
            return PostgresDatabase(url, pool_size=4)

    def tracked() -> Database:
        database = factory()
        opened.append(database)
        return database

    yield tracked
    for database in opened:
        database.close()


def pytest_configure(config: pytest.Config) -> None:
    """Fail in the first second, naming what is missing and how to install it, when the
    machine lacks a program the suite needs (tests/prerequisites.py)."""
    import glob
    import shutil

    from tests import prerequisites

    if shutil.which("initdb") is None:
        candidates = map(Path, glob.glob(prerequisites.POSTGRES_BIN_GLOB))
        os.environ["PATH"] = prerequisites.with_postgres_on_path(os.environ["PATH"], candidates)
    java = prerequisites.java_version(dict(os.environ), shutil.which)
    lines = prerequisites.missing(shutil.which, java)
    if lines:
        raise pytest.UsageError(prerequisites.report(lines))


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark each test with what it needs (tests/support/markers.py), as it is collected: before
    any ``pytest_collection_modifyitems``, xdist's among them, which moves a grouped test's id
    to ``id@group``."""
    markers.mark(item)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its fuzz tally to the controller, which prints the summary."""
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:
        from tests import fuzz

        worker_output["fuzz_tally"] = fuzz.tally_rows()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Whole modules to a worker, and the Spark tests all to one (tests/support/scheduling.py)."""
    from tests.support.scheduling import ModulesAndSpark

    return ModulesAndSpark(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """The controller's side of :func:`pytest_sessionfinish` (only called under xdist)."""
    from tests import fuzz

    fuzz.add_rows(getattr(node, "workeroutput", {}).get("fuzz_tally", []))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The fuzz suites' figures: requests tried and how they were answered (tests/fuzz.py)."""
    from tests import fuzz

    if fuzz.TALLY:
        terminalreporter.section("fuzz: requests tried and their answers")
        for line in fuzz.summary_lines():
            terminalreporter.write_line(line)
        fuzz.write_report()
