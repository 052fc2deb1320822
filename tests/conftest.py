"""Fixtures shared by every test package: a real gateway process started the way users start it."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.store.database import Database
from gateway.store.sqlite import SQLiteDatabase
from tests.mns_http import RawClient
from tests.postgres import PostgresServer, postgres_server

ACCESS_KEY_ID = "test-key-id"
ACCESS_KEY_SECRET = "test-key-secret"
#: Retries a hundred times sooner, and pushes and leases that give up quickly.
FAST_RETRIES = {
    "MNS_GATEWAY_RETRY_SCALE": "0.01",
    "MNS_GATEWAY_PUSH_TIMEOUT": "0.5",
    "MNS_GATEWAY_LEASE_SECONDS": "2",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunningGateway:
    process: subprocess.Popen[bytes]
    port: int
    data_dir: Path
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def raw(self) -> RawClient:
        return RawClient("127.0.0.1", self.port, ACCESS_KEY_ID, ACCESS_KEY_SECRET)

    def kill(self) -> None:
        """SIGKILL the whole process group: the arbiter and every worker, mid-whatever."""
        import signal

        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def wait_until_ready(port: int, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gateway exited with {process.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("gateway did not become ready")


def start_gateway(
    data_dir: Path,
    extra_env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    port: int | None = None,
) -> RunningGateway:
    """``mns-gateway serve`` in a subprocess, exactly as the README starts it."""
    port = port or free_port()
    env = {
        **os.environ,
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        "MNS_GATEWAY_RETRY_SCALE": "0.01",
        **(extra_env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "gateway.cli",
        "serve",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        *args,
    ]
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    gateway = RunningGateway(process, port, data_dir, env)
    try:
        wait_until_ready(port, process)
    except Exception:
        gateway.stop()
        raise
    return gateway


@pytest.fixture(scope="session")
def gateway_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    gateway = start_gateway(tmp_path_factory.mktemp("gateway-data"))
    yield gateway
    gateway.stop()


@pytest.fixture()
def raw(gateway_process: RunningGateway) -> RawClient:
    return gateway_process.raw()


@pytest.fixture()
def account(gateway_process: RunningGateway):  # type: ignore[no-untyped-def]
    from mns.account import Account

    return Account(gateway_process.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)


_counter = iter(range(1, 10**9))


@pytest.fixture()
def unique() -> str:
    """A fresh name prefix, so tests sharing the session gateway never collide."""
    return f"t{os.getpid()}x{next(_counter)}"


#: The database backends the store and API tests run against. CI runs both; a developer without
#: PostgreSQL may set ``MNS_GATEWAY_TEST_BACKENDS=sqlite`` (a missing server otherwise fails).
BACKENDS = [
    name.strip()
    for name in os.environ.get("MNS_GATEWAY_TEST_BACKENDS", "sqlite,postgresql").split(",")
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
    call stands in for a second process or replica)."""
    opened: list[Database] = []
    if request.param == "sqlite":
        path = tmp_path / "db.sqlite3"

        def factory() -> Database:
            return SQLiteDatabase(path, synchronous="NORMAL")

    else:
        from gateway.store.postgres import PostgresDatabase

        url = request.getfixturevalue("postgres").new_database()

        def factory() -> Database:
            return PostgresDatabase(url, pool_size=4)

    def tracked() -> Database:
        database = factory()
        opened.append(database)
        return database

    yield tracked
    for database in opened:
        database.close()
