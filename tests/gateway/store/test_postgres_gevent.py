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

def ticker():
    # Another greenlet that only wants the event loop: it keeps ticking during the queries.
    for _ in range(40):
        ticks.append(time.monotonic())
        gevent.sleep(0.025)

def query():
    database.read(lambda c: c.execute("SELECT pg_sleep(0.5) AS slept").fetchone())

database.ping()  # the pool's first connections are open before timing starts
started = time.monotonic()
tick = gevent.spawn(ticker)
gevent.joinall([gevent.spawn(query) for _ in range(6)])
elapsed = time.monotonic() - started
tick.join()
gaps = [b - a for a, b in zip(ticks, ticks[1:])]
database.close()
print(json.dumps({"elapsed": elapsed, "longest_tick_gap": max(gaps)}))
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
    # Six half-second queries: about 0.5 s together; one after another would take 3 s.
    assert figures["elapsed"] < 1.5, figures
    # The event loop never stood still for the length of a query.
    assert figures["longest_tick_gap"] < 0.3, figures
