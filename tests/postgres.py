"""A real PostgreSQL server for the tests, started from the machine's own binaries.

``initdb`` and ``pg_ctl`` (PostgreSQL 15 here) must be on PATH; a missing server fails the tests
that need one, loudly, rather than skipping them. The server refuses to run as root, so when the
tests run as root it runs as the ``postgres`` system user, in a directory of its own under the
system temp dir (pytest's own temp dirs are private to root). Each test gets a database of its
own, so tests never see each other's rows: an empty one, or one the gateway's schema was
already applied to (:meth:`PostgresServer.migrated_database`).

pytest-postgresql does the same job, but starts ``initdb``/``pg_ctl`` as the current user, which
is root in CI here; these forty lines run it as the server's own user instead.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gateway.testing.process import free_port

SERVER_USER = "postgres"
_databases = itertools.count(1)


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", SERVER_USER, "--", *command]


@dataclass
class PostgresServer:
    directory: Path
    port: int
    #: The server's ``-c`` options, for :meth:`start` after a :meth:`stop`.
    flags: str = ""
    #: The database :meth:`migrated_database` copies, once it has been made.
    _migrated: str | None = field(default=None, repr=False)

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def stop(self, mode: str = "immediate") -> None:
        """``pg_ctl stop``; ``immediate`` is a crash as far as clients can tell."""
        _pg_ctl("-D", str(self.data), "-m", mode, "-w", "stop")

    def start(self) -> None:
        """Start it again, on the same port and data dir (after :meth:`stop`)."""
        _pg_ctl("-D", str(self.data), "-l", str(self.directory / "log"), "-w", "-t", "60",
                "-o", f"-p {self.port} {self.flags}", "start")  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SERVER_USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self, template: str | None = None) -> str:
        """A fresh database, empty or a copy of ``template``; its URL."""
        import psycopg

        name = f"test_{os.getpid()}_{next(_databases)}"
        copy = f" TEMPLATE {template}" if template else ""
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}{copy}")
        return self.url(name)

    def migrated_database(self) -> str:
        """A fresh database with every migration applied; its URL. The first call migrates one
        and each call copies it: the server spent 0.05-0.09 s of CPU creating a copy and
        0.05-0.07 opening a store on it, against 0.03-0.07 creating an empty database and
        0.10-0.16 migrating it (2026-12-04), and the store tests each take one."""
        if self._migrated is None:
            from gateway.store.backends.postgres import PostgresDatabase

            made = self.new_database()
            PostgresDatabase(made, pool_size=1).close()  # migrates as it opens
            self._migrated = made.rsplit("/", 1)[1]
        return self.new_database(template=self._migrated)

    def server_pids(self) -> list[int]:
        """The postmaster and its children (for CPU accounting in benchmarks)."""
        postmaster = int((self.directory / "data" / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(
            ["pgrep", "-P", str(postmaster)], capture_output=True, text=True, check=False
        ).stdout.split()
        return [postmaster, *map(int, children)]


def _pg_ctl(*arguments: str) -> None:
    subprocess.run(
        _as_server_user(["pg_ctl", *arguments]), check=True, capture_output=True, timeout=120
    )


def require_binaries() -> None:
    missing = [name for name in ("initdb", "pg_ctl") if shutil.which(name) is None]
    if missing:
        raise RuntimeError(
            f"PostgreSQL is required for these tests: {', '.join(missing)} not on PATH"
            " (Debian: apt-get install postgresql-15, and put its bin directory on PATH)"
        )


@contextlib.contextmanager
def postgres_server(**settings: str) -> Iterator[PostgresServer]:
    """Start a throwaway server; stop it and delete its files afterwards."""
    require_binaries()
    directory = Path(tempfile.mkdtemp(prefix="mns-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam(SERVER_USER)
        os.chown(directory, user.pw_uid, user.pw_gid)
    data, port = directory / "data", free_port()
    options = {"listen_addresses": "127.0.0.1", "unix_socket_directories": str(directory)}
    options.update(settings)
    flags = " ".join(f"-c {key}={value}" for key, value in options.items())
    run = lambda *command: subprocess.run(  # noqa: E731
        _as_server_user(list(command)), check=True, capture_output=True, timeout=120
    )
    try:
        run("initdb", "-D", str(data), "-U", SERVER_USER, "--auth=trust", "-E", "UTF8")
        run("pg_ctl", "-D", str(data), "-l", str(directory / "log"), "-w", "-t", "60",
            "-o", f"-p {port} {flags}", "start")  # fmt: skip
        yield PostgresServer(directory, port, flags)
    finally:
        with contextlib.suppress(Exception):
            run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def standby_server(primary: PostgresServer) -> Iterator[PostgresServer]:
    """A streaming replica of ``primary`` (``pg_basebackup -R``), started on a port of its own,
    and made synchronous: from then on a commit on the primary is acknowledged only once the
    standby has it, so a failover to it loses nothing acknowledged."""
    directory = Path(tempfile.mkdtemp(prefix="mns-pg-standby-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam(SERVER_USER)
        os.chown(directory, user.pw_uid, user.pw_gid)
    flags = f"-c listen_addresses=127.0.0.1 -c unix_socket_directories={directory}"
    standby = PostgresServer(directory, free_port(), flags)
    try:
        subprocess.run(
            _as_server_user(["pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port),
                             "-U", SERVER_USER, "-D", str(standby.data), "-R", "-X", "stream",
                             "-c", "fast"]),
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        standby.start()
        _make_synchronous(primary)
        yield standby
    finally:
        with contextlib.suppress(Exception):
            standby.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _make_synchronous(primary: PostgresServer) -> None:
    import psycopg

    with psycopg.connect(primary.url(), autocommit=True) as connection:
        connection.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        connection.execute("SELECT pg_reload_conf()")
        for _ in range(600):
            row = connection.execute(
                "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'"
            ).fetchone()
            if row and row[0]:
                return
            connection.execute("SELECT pg_sleep(0.05)")
    raise RuntimeError("the standby never became synchronous")


def promote(standby: PostgresServer) -> None:
    """``pg_ctl promote``: the standby takes writes from now on."""
    _pg_ctl("-D", str(standby.data), "-w", "-t", "60", "promote")
