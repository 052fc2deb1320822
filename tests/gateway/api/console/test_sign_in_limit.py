"""The sign-in limit is kept in the database: replicas over one database enforce one limit
between them (two app instances here, with one injected clock each), old windows are purged
and the table stays bounded; on each backend."""

from __future__ import annotations

import threading
from pathlib import Path

from gateway.store.sign_in import SignInAttempts
from gateway.store.sql.sign_in_sql import wait_ms
from tests.conftest import OpenDatabase
from tests.gateway.api.console.conftest import KEY_ID, SECRET, T0, make_console


def _rows(attempts: SignInAttempts) -> list[str]:
    return attempts.database.read(
        lambda c: [
            r["client"]
            for r in c.execute("SELECT client FROM console_sign_in_attempts ORDER BY client")
        ]
    )


def test_the_window_rule() -> None:
    assert wait_ms(1000, 4, 1500, 5, 300_000) == 0  # below the limit
    assert wait_ms(1000, 5, 1500, 5, 300_000) == 299_500  # at it: until the window ends
    assert wait_ms(1000, 5, 301_000, 5, 300_000) == 0  # the window has passed


def test_two_replicas_share_one_limit(open_database: OpenDatabase, tmp_path: Path) -> None:
    first = make_console(open_database, tmp_path / "a")
    second = make_console(open_database, tmp_path / "b")
    try:
        replicas = [first, second, first, second, first]
        for replica in replicas:  # five failures, spread over both
            assert replica.sign_in(KEY_ID, "wrong").status_code == 401
        for replica in (first, second):  # either one now refuses, even the right pair
            blocked = replica.sign_in(KEY_ID, SECRET)
            assert blocked.status_code == 429
            assert int(blocked.headers["Retry-After"]) == 301
        for replica in (first, second):
            replica.clock.now += 300
        assert second.sign_in(KEY_ID, "wrong").status_code == 401  # a new window
        assert first.sign_in(KEY_ID, SECRET).status_code == 302
        # A good sign-in clears the address's count on every replica.
        for _ in range(4):
            assert second.sign_in(KEY_ID, "wrong").status_code == 401
        assert second.sign_in(KEY_ID, SECRET).status_code == 302
    finally:
        first.oplog.close()
        second.oplog.close()


def _limiter(open_database: OpenDatabase, now: list[float], **options: int) -> SignInAttempts:
    database = open_database()
    database.migrate()
    return SignInAttempts(database, lambda: now[0], **options)  # type: ignore[arg-type]


def test_attempts_at_once_on_two_replicas_never_pass_the_limit(
    open_database: OpenDatabase,
) -> None:
    now = [T0]
    replicas = [_limiter(open_database, now), _limiter(open_database, now)]
    results: list[float] = []
    lock = threading.Lock()

    def attempt(limiter: SignInAttempts) -> None:
        wait = limiter.attempt("203.0.113.9")
        with lock:
            results.append(wait)

    threads = [threading.Thread(target=attempt, args=(replicas[i % 2],)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 12
    assert results.count(0.0) == 5 and all(wait == 300 for wait in results if wait)


def test_old_windows_are_purged_and_the_table_stays_bounded(
    open_database: OpenDatabase,
) -> None:
    now = [T0]
    attempts = _limiter(open_database, now, limit=1, max_clients=2, purge_every=1)
    for client in ("a", "b", "c", "d"):
        now[0] += 1
        assert attempts.attempt(client) == 0
    # Before d was counted, the oldest window (a) went: at most max_clients + purge_every rows.
    assert _rows(attempts) == ["b", "c", "d"]
    assert attempts.attempt("a") == 0 and attempts.attempt("d") > 0
    now[0] += 300
    assert attempts.attempt("e") == 0
    assert _rows(attempts) == ["e"]  # every other window had passed
    attempts.succeeded("e")
    assert _rows(attempts) == []
