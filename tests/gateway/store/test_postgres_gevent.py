"""Under gevent a PostgreSQL query blocks only its own greenlet.

psycopg waits for the server in one function; its C version cannot cooperate with gevent, and
psycopg only avoids it when gevent patched ``select`` before psycopg was imported. The gateway
makes sure of it either way. Each case runs in a fresh interpreter: monkey-patching is for life.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.postgres import PostgresServer

SCRIPT = """
import json, sys, time
if sys.argv[2] == "psycopg-first":
    import psycopg  # imported before gevent patches: psycopg chose its C wait function
from gevent import monkey
monkey.patch_all()
import gevent
from gateway.store.backends.postgres import PostgresDatabase

database = PostgresDatabase(sys.argv[1], pool_size=8, migrate=False)
ticks = []
windows = []

def ticker():
    # Another greenlet that only wants the event loop: it keeps ticking during the queries.
    for _ in range(40):
        ticks.append(time.monotonic())
        gevent.sleep(0.025)

def query():
    started = time.monotonic()
    database.read(lambda c: c.execute("SELECT pg_sleep(0.5) AS slept").fetchone())
    windows.append((started, time.monotonic()))

database.ping()  # the pool's first connections are open before timing starts
tick = gevent.spawn(ticker)
gevent.joinall([gevent.spawn(query) for _ in range(6)])
tick.join()
database.close()
print(json.dumps({
    "overlapped": max(start for start, _ in windows) < min(end for _, end in windows),
    "ticks_during_queries": sum(start < t < end for start, end in windows for t in ticks),
}))
"""


@pytest.mark.parametrize("order", ["gevent-first", "psycopg-first"])
def test_queries_run_concurrently_on_greenlets(postgres: PostgresServer, order: str) -> None:
    url = postgres.new_database()
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, url, order],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout.splitlines()[-1])
    # Six half-second queries all under way at once, not one after another: however slow the
    # machine, a query that blocked the process would end before the next one started.
    assert figures["overlapped"] is True, figures
    # And the event loop went on while they waited: a blocking wait leaves no tick inside any
    # query's own time (about 20 each when they cooperate).
    assert figures["ticks_during_queries"] >= 6, figures
