"""psycopg waiting on gevent's hub (:mod:`gateway.store.backends.pg_waiting`), against a real
PostgreSQL.

Each scenario runs in a fresh interpreter (monkey-patching is for life) and prints what it saw
as JSON; the assertions are here. Timings only bound the waits generously: a wait that blocked
the process, hung or leaked would miss them by seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.postgres import PostgresServer

PATCHED = """
import json, sys, time
from gevent import monkey
monkey.patch_all()
import gevent
import psycopg
from psycopg import waiting
from gateway.store.backends.pg_waiting import wait_on_hub
from gateway.store.backends.postgres import PostgresDatabase
from gateway.store.sql.connection import SelfContained

url = sys.argv[1]
database = PostgresDatabase(url, pool_size=4, migrate=False)
hub = gevent.get_hub()
result = {"hub_wait": waiting.wait is wait_on_hub}


def connect():
    return psycopg.connect(url, autocommit=True)


def raised(function):
    try:
        function()
    except BaseException as error:
        return type(error).__module__ + "." + type(error).__qualname__
    return None


def killed():
    # A greenlet killed while it waits for a query stops at once and its watcher is closed:
    # over many kills, the loop's count of active watchers comes back to where it was.
    def kill_waiting(wait):
        waiting_ = gevent.spawn(wait)
        gevent.sleep(0.05)
        started = time.monotonic()
        waiting_.kill(block=True, timeout=3)
        return time.monotonic() - started

    connect().close()
    gevent.sleep(0.2)  # the pool's own greenlets settle first
    baseline = hub.loop.activecnt
    durations = []
    for _ in range(20):
        victim = connect()
        durations.append(kill_waiting(lambda: victim.execute("SELECT pg_sleep(5)")))
        victim.close()  # left in the middle of a query: only closing it is left
    gevent.sleep(0.2)
    result["watchers_left"] = hub.loop.activecnt - baseline
    # Through the store: the pool discards the connection and the database keeps answering.
    sleep = lambda c: c.execute("SELECT pg_sleep(5)").fetchall()
    durations.append(kill_waiting(lambda: database.write(SelfContained(sleep))))
    result["longest_kill"] = max(durations)
    result["pool_answers"] = database.ping()


def terminated():
    # The server ends the connection while a greenlet waits on it: a psycopg error.
    with connect() as victim, connect() as admin:
        pid = victim.info.backend_pid
        waiting_ = gevent.spawn(raised, lambda: victim.execute("SELECT pg_sleep(5)"))
        gevent.sleep(0.2)
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        result["error"] = waiting_.get(timeout=3)


def cancelled():
    # psycopg's query cancellation still reaches a query waited for on the hub.
    with connect() as victim:
        waiting_ = gevent.spawn(raised, lambda: victim.execute("SELECT pg_sleep(5)"))
        gevent.sleep(0.2)
        started = time.monotonic()
        victim.cancel_safe(timeout=3)
        result["error"] = waiting_.get(timeout=3)
        result["seconds"] = time.monotonic() - started
        result["usable_after"] = victim.execute("SELECT 1 AS one").fetchone()[0] == 1


def notifies():
    # notifies(timeout=...) keeps its deadline and lets other greenlets run meanwhile; a
    # NOTIFY sent while it waits is received.
    ticks = []

    def ticker():
        for _ in range(20):
            ticks.append(time.monotonic())
            gevent.sleep(0.02)

    with connect() as listener, connect() as sender:
        listener.execute("LISTEN pgw")
        tick = gevent.spawn(ticker)
        started = time.monotonic()
        result["idle"] = [n.payload for n in listener.notifies(timeout=0.3)]
        ended = time.monotonic()
        result["idle_seconds"] = ended - started
        tick.join()
        result["ticks_while_waiting"] = sum(started < t < ended for t in ticks)
        gevent.spawn_later(0.1, sender.execute, "NOTIFY pgw, 'hello'")
        result["received"] = [n.payload for n in listener.notifies(timeout=3, stop_after=1)]


def large():
    # A parameter far larger than the socket's buffers: the query is written over many waits
    # for the socket to become writable, and its result read back whole.
    text = "x" * (32 * 1024 * 1024)
    with connect() as connection:
        row = connection.execute("SELECT length(%s) AS n", (text,)).fetchone()
    result["length"] = row[0]


def pipelined():
    # A write in pipeline mode sends its statements without waiting for their answers, and
    # the socket takes each at once: the event loop turns while the transaction waits for the
    # server, not once for every statement sent.
    def statements(connection):
        for n in range(20):
            connection.execute("SELECT ?::int AS n", (n,))
        return connection.execute("SELECT 20 AS n").fetchone()["n"]

    database.write(statements, durable=False)  # the pool's connection made and checked
    before = hub.loop.iteration
    result["answer"] = database.write(statements, durable=False)
    result["loop_turns"] = hub.loop.iteration - before


globals()[sys.argv[2]]()
database.close()
print(json.dumps(result))
"""

UNPATCHED = """
import json, sys, threading, time
from psycopg import waiting
own = waiting.wait
from gateway.store.backends.postgres import PostgresDatabase

database = PostgresDatabase(sys.argv[1], pool_size=4, migrate=False)
database.ping()
threads = [
    threading.Thread(target=database.read, args=(lambda c: c.execute("SELECT pg_sleep(0.5)"),))
    for _ in range(3)
]
started = time.monotonic()
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
elapsed = time.monotonic() - started
database.close()
print(json.dumps({"own_wait": waiting.wait is own, "elapsed": elapsed}))
"""


def run(script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.fixture()
def url(postgres: PostgresServer) -> str:
    return postgres.new_database()


def test_a_killed_greenlet_stops_waiting_and_leaves_no_watcher(url: str) -> None:
    seen = run(PATCHED, url, "killed")
    assert seen["hub_wait"] is True
    assert seen["longest_kill"] < 1.0, seen
    assert seen["watchers_left"] == 0, seen
    assert seen["pool_answers"] is True


def test_a_lost_connection_is_a_psycopg_error(url: str) -> None:
    seen = run(PATCHED, url, "terminated")
    assert seen["error"].startswith("psycopg.errors."), seen
    assert "OperationalError" in seen["error"] or "AdminShutdown" in seen["error"], seen


def test_cancelling_a_query_still_works(url: str) -> None:
    seen = run(PATCHED, url, "cancelled")
    assert seen["error"] == "psycopg.errors.QueryCanceled", seen
    assert seen["seconds"] < 2.0, seen
    assert seen["usable_after"] is True


def test_notifies_keeps_its_deadline_and_cooperates(url: str) -> None:
    seen = run(PATCHED, url, "notifies")
    assert seen["idle"] == []
    assert 0.25 < seen["idle_seconds"] < 1.5, seen
    # About 15 when it cooperates; a wait that blocked the process leaves none inside it.
    assert seen["ticks_while_waiting"] >= 3, seen
    assert seen["received"] == ["hello"]


def test_a_query_larger_than_the_socket_buffers(url: str) -> None:
    assert run(PATCHED, url, "large")["length"] == 32 * 1024 * 1024


def test_statements_sent_in_pipeline_mode_do_not_each_wait_on_the_hub(url: str) -> None:
    seen = run(PATCHED, url, "pipelined")
    assert seen["answer"] == 20
    # BEGIN, SET LOCAL, 21 SELECTs and COMMIT: two waits for the server (the last SELECT's
    # row, the COMMIT's answer), and a turn or two for what else the hub had to do. With a
    # turn of the loop per statement sent it was 54.
    assert seen["loop_turns"] <= 6, seen


def test_without_gevent_psycopg_keeps_its_own_wait(url: str) -> None:
    seen = run(UNPATCHED, url)
    assert seen["own_wait"] is True
    # Three half-second queries on three threads: together, not one after another.
    assert seen["elapsed"] < 1.4, seen
