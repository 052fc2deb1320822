"""Server-side console sessions (issue 33 finding 11): the cookie is a random id and nothing
else; the session lives in the store, shared by replicas, and ends at sign-out and when its time
is up, for every copy of the cookie."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from gateway.queues.records import QueueAttributes
from tests.conftest import OpenDatabase
from tests.gateway.api.console.conftest import SECRET, Console, make_console

COOKIE = "mns_console"


def _cookie(console: Console) -> str:
    cookie = console.client.get_cookie(COOKIE, path="/console")
    assert cookie is not None
    return cookie.value


def _copy(console: Console, value: str) -> None:
    console.client.set_cookie(COOKIE, value, path="/console")


def test_the_cookie_is_a_random_id_and_the_store_keeps_only_its_hash(signed_in: Console) -> None:
    value = _cookie(signed_in)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", value), value
    old_fingerprint = hashlib.sha256(b"mns-console:" + SECRET.encode()).hexdigest()[:32]
    assert old_fingerprint not in value
    rows = signed_in.store.database.read(
        lambda conn: [dict(r) for r in conn.execute("SELECT * FROM console_sessions")]
    )
    assert rows and all(value not in str(row) and SECRET not in str(row) for row in rows)
    assert any(row["id_hash"] == hashlib.sha256(value.encode()).hexdigest() for row in rows)


def test_sign_in_gives_a_new_id(console: Console) -> None:
    console.client.get("/console/sign-in")  # a session (with its CSRF token) before signing in
    before = _cookie(console)
    assert console.sign_in().status_code == 302
    assert _cookie(console) != before


def test_sign_out_ends_every_copy_of_the_cookie(signed_in: Console) -> None:
    signed_in.store.queues.create_queue("jobs", QueueAttributes())
    value, token = _cookie(signed_in), signed_in.token("/console/queues")
    assert signed_in.post("/console/sign-out").status_code == 302
    _copy(signed_in, value)  # the copy taken before
    assert signed_in.client.get("/console/queues").status_code == 302
    sent = signed_in.client.post(
        "/console/queues/jobs/send", data={"csrf_token": token, "body": "after sign-out"}
    )
    assert sent.status_code in (302, 403)
    assert "/console/queues" not in sent.headers.get("Location", "/console/sign-in")
    assert signed_in.store.queues.get_queue("jobs")[1].active == 0


def test_sign_out_on_one_replica_ends_the_session_on_another(
    open_database: OpenDatabase, tmp_path: Path, signed_in: Console
) -> None:
    replica = make_console(open_database, tmp_path / "replica")
    try:
        _copy(replica, _cookie(signed_in))
        assert replica.client.get("/console/queues").status_code == 200
        assert signed_in.post("/console/sign-out").status_code == 302
        assert replica.client.get("/console/queues").status_code == 302
    finally:
        replica.oplog.close()


def test_a_session_ends_when_its_time_is_up(signed_in: Console) -> None:
    from gateway.api.console.sessions import SESSION_SECONDS  # here: the file runs on 8db9520

    signed_in.clock.now += SESSION_SECONDS - 60
    assert signed_in.client.get("/console/queues").status_code == 200
    signed_in.clock.now += 120
    assert signed_in.client.get("/console/queues").status_code == 302


def test_a_flood_of_visitors_neither_grows_the_table_nor_pushes_out_signed_in_sessions(
    console: Console,
) -> None:
    from gateway.store.console_sessions import ConsoleSessions

    sessions = ConsoleSessions(console.store.database, console.clock, max_sessions=5, purge_every=1)
    sessions.save("signed-in", '{"key_id":"k"}', 3600, signed_in=True)
    for index in range(20):  # visitors of the sign-in page, each with a CSRF token
        sessions.save(f"visitor-{index}", '{"csrf":"t"}', 7200, signed_in=False)
    assert sessions.load("signed-in") == '{"key_id":"k"}'
    rows = console.store.database.read(
        lambda conn: conn.execute("SELECT COUNT(*) AS n FROM console_sessions").fetchone()["n"]
    )
    assert int(rows) <= 6
    sessions.end("signed-in")
    assert sessions.load("signed-in") is None
