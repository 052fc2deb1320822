"""Running the benchmarks on each database backend, and CPU time split by who spent it.

``--database-url URL`` adds PostgreSQL beside the embedded SQLite: every measurement runs on
both, one after the other, and the figures are printed side by side. ``--database-url auto``
starts a throwaway PostgreSQL 15 from the machine's binaries (as the tests do) and removes it
afterwards. Each test configuration gets a fresh database.

CPU is read from /proc: for the gateway, its process tree (gunicorn's arbiter, its workers, and
workers that already exited, through the arbiter's reaped-children counters); for PostgreSQL,
the postmaster's tree the same way (backends come and go with connections). Per operation, that
says what a deployment pays on each side, which throughput on a shared machine does not.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_TICK = os.sysconf("SC_CLK_TCK")
_names = itertools.count(1)
#: PostgreSQL settings for a benchmark server: room for every pool, WAL on as always.
_BENCH_SERVER = {"max_connections": "300", "shared_buffers": "256MB"}


def add_database_arguments(parser: argparse.ArgumentParser, *, only: bool = False) -> None:
    """``--database-url``; with ``only``, also ``--only SQLite|PostgreSQL`` (:func:`backends`
    then yields that one alone)."""
    parser.add_argument(
        "--database-url",
        help="also run on this PostgreSQL database (postgresql://...), or 'auto' to start one",
    )
    if only:
        parser.add_argument(
            "--only", dest="backend", help="run on this backend only (SQLite or PostgreSQL)"
        )


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def tree_cpu_seconds(root: int) -> float:
    """User+system CPU of ``root``, its live descendants and the children it has reaped."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        fields = _stat(pid)
        if fields is None:
            continue
        total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
        stack += children.get(pid, [])
    return total / _TICK


@dataclass
class Backend:
    """One database the benchmarks run on: ``url`` ``None`` is the embedded SQLite."""

    label: str
    server_url: str | None = None
    postmaster: int | None = None

    def new_database(self) -> str | None:
        """A fresh database for one configuration (``None`` for SQLite: a new data dir is)."""
        if self.server_url is None:
            return None
        import psycopg

        name = f"bench_{os.getpid()}_{next(_names)}"
        with psycopg.connect(self.server_url, autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.server_url.rsplit("/", 1)[0] + "/" + name

    def drop_database(self, url: str | None) -> None:
        """Drop a database :meth:`new_database` made, then checkpoint, so that the next
        configuration runs neither beside this one's autovacuum nor through a checkpoint of
        its writes (bench/endpoint_health.py compares runs made one after the other)."""
        if self.server_url is None or url is None:
            return
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.server_url, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            connection.execute("CHECKPOINT")

    def database_cpu_seconds(self) -> float | None:
        return None if self.postmaster is None else tree_cpu_seconds(self.postmaster)

    def env(self, database_url: str | None) -> dict[str, str]:
        return {"MNS_GATEWAY_DATABASE_URL": database_url} if database_url else {}


def _postmaster_of(url: str) -> int | None:
    """The server's postmaster pid, when it runs on this machine and we may read its data dir."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as connection:
            row = connection.execute("SHOW data_directory").fetchone()
        return int((Path(row[0]) / "postmaster.pid").read_text().split()[0])
    except (psycopg.Error, OSError, ValueError):
        return None


@contextlib.contextmanager
def backends(args: argparse.Namespace) -> Iterator[list[Backend]]:
    """SQLite, plus PostgreSQL when ``--database-url`` asks for it; only the one ``--only``
    names, where the benchmark offers it."""
    with _all_backends(args) as found:
        chosen = getattr(args, "backend", None)
        yield [b for b in found if chosen is None or b.label.lower() == chosen.lower()]


@contextlib.contextmanager
def _all_backends(args: argparse.Namespace) -> Iterator[list[Backend]]:
    sqlite = Backend("SQLite")
    if not args.database_url:
        yield [sqlite]
        return
    if args.database_url != "auto":
        yield [sqlite, Backend("PostgreSQL", args.database_url, _postmaster_of(args.database_url))]
        return
    from tests.postgres import postgres_server

    with postgres_server(**_BENCH_SERVER) as server:
        yield [sqlite, Backend("PostgreSQL", server.url(), server.server_pids()[0])]


@dataclass
class CpuMeter:
    """CPU spent by the gateway (its process tree) and the database server between two reads."""

    gateway_pid: int
    backend: Backend

    def read(self) -> tuple[float, float | None]:
        return tree_cpu_seconds(self.gateway_pid), self.backend.database_cpu_seconds()

    @staticmethod
    def per_operation_ms(
        before: tuple[float, float | None], after: tuple[float, float | None], operations: float
    ) -> tuple[float, float | None]:
        gateway = (after[0] - before[0]) / operations * 1000
        database = None
        if before[1] is not None and after[1] is not None:
            database = (after[1] - before[1]) / operations * 1000
        return gateway, database
