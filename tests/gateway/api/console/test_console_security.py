"""Sign-in, the session cookie, CSRF, the Content-Security-Policy and the sign-in rate limit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gateway.protocol.notify import ContentFormat
from gateway.queues.records import NewMessage, QueueAttributes
from gateway.topics.records import Subscription
from tests.conftest import OpenDatabase
from tests.gateway.api.console.conftest import (
    KEY_ID,
    OTHER_ID,
    OTHER_SECRET,
    SECRET,
    Console,
    make_console,
)

PAGES = (
    "/console/",
    "/console/queues",
    "/console/queues/jobs",
    "/console/queues/jobs?peek=5",
    "/console/topics",
    "/console/topics/orders",
    "/console/dead-letters",
    "/console/deliveries",
    "/console/deliveries?message_id=X",
)


def _resources(console: Console) -> None:
    store = console.store
    store.queues.create_queue("jobs", QueueAttributes())
    store.queues.send("jobs", [NewMessage("hello")])
    store.topics.create_topic("orders", 65536, False)
    store.topics.subscribe(
        Subscription(
            "orders", "audit", "http://127.0.0.1:9/hook", notify_content_format=ContentFormat.JSON
        )
    )


def test_every_page_needs_a_session(console: Console) -> None:
    for page in PAGES:
        response = console.client.get(page)
        assert response.status_code == 302, page
        assert response.headers["Location"].startswith("/console/sign-in?next=")
    assert console.client.get("/console/static/htmx.min.js").status_code == 200


def test_sign_in_sets_a_strict_http_only_cookie_and_sign_out_ends_it(console: Console) -> None:
    response = console.sign_in()
    assert response.status_code == 302
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
    assert "Secure" not in cookie  # plain http: a Secure cookie would never come back
    assert console.client.get("/console/queues").status_code == 200
    assert console.post("/console/sign-out").status_code == 302
    assert console.client.get("/console/queues").status_code == 302


def test_the_cookie_is_secure_behind_https(console: Console) -> None:
    token = console.token()
    response = console.client.post(
        "/console/sign-in",
        data={"csrf_token": token, "access_key_id": KEY_ID, "access_key_secret": SECRET},
        headers={"X-Forwarded-Proto": "https"},
    )
    assert "; Secure" in response.headers["Set-Cookie"]


def test_a_wrong_pair_is_refused(console: Console) -> None:
    assert console.sign_in(KEY_ID, "not-the-secret").status_code == 401
    assert console.sign_in("unknown", SECRET).status_code == 401
    assert console.client.get("/console/").status_code == 302


def test_admin_keys_restrict_who_signs_in(open_database: OpenDatabase, tmp_path: Path) -> None:
    console = make_console(open_database, tmp_path, admin_access_keys=(OTHER_ID,))
    try:
        assert console.sign_in(KEY_ID, SECRET).status_code == 401
        assert console.sign_in(OTHER_ID, OTHER_SECRET).status_code == 302
    finally:
        console.oplog.close()


def test_a_session_ends_when_its_secret_changes(
    open_database: OpenDatabase, tmp_path: Path, signed_in: Console
) -> None:
    """Another app over the same store (a replica) accepts the session; one whose key pair has
    a new secret does not."""
    cookie = signed_in.client.get_cookie("mns_console", path="/console")
    assert cookie is not None
    replica = make_console(open_database, tmp_path / "replica")
    replica.client.set_cookie("mns_console", cookie.value, path="/console")
    assert replica.client.get("/console/queues").status_code == 200
    replica.oplog.close()
    rotated = make_console(open_database, tmp_path / "rotated")
    rotated.app.extensions["mns"].keys.permanent[KEY_ID] = "a-new-secret"
    rotated.client.set_cookie("mns_console", cookie.value, path="/console")
    assert rotated.client.get("/console/queues").status_code == 302
    rotated.oplog.close()


def test_pages_carry_a_policy_without_inline_script(signed_in: Console) -> None:
    _resources(signed_in)
    for page in (*PAGES, "/console/sign-in"):
        response = signed_in.client.get(page)
        assert response.status_code == 200, page
        policy = response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert response.headers["X-Frame-Options"] == "DENY"
        # Every script is a file from the console itself; no inline handlers or styles.
        for tag in re.findall(r"<script[^>]*>", response.text):
            assert 'src="/console/static/' in tag, (page, tag)
        assert not re.search(r"\son[a-z]+\s*=", response.text), page
        assert not re.search(r"\sstyle\s*=", response.text), page


def test_sign_in_attempts_are_rate_limited(console: Console) -> None:
    for _ in range(5):
        assert console.sign_in(KEY_ID, "wrong").status_code == 401
    blocked = console.sign_in(KEY_ID, SECRET)  # even the right pair, while blocked
    assert blocked.status_code == 429
    assert int(blocked.headers["Retry-After"]) > 0
    console.clock.now += 301
    assert console.sign_in(KEY_ID, SECRET).status_code == 302


def _state(console: Console) -> object:
    store = console.store
    queue, counts = store.queues.get_queue("jobs")
    subscriptions = store.topics.list_subscriptions("orders", "", "", 100).items
    return (
        queue.attributes,
        counts,
        [s.name for s in subscriptions],
        store.topics.get_topic("orders")[1],
    )


@pytest.mark.parametrize("token", [None, "forged-token", ""])
def test_no_form_changes_anything_without_the_sessions_csrf_token(
    signed_in: Console, token: str | None
) -> None:
    """Every POST the console has, with a missing, empty or forged token: 403, nothing
    changed."""
    _resources(signed_in)
    before = _state(signed_in)
    fields = {
        "body": "x",
        "delay_seconds": "5",
        "visibility_timeout": "99",
        "receipt_handle": "x",
        "name": "new-sub",
        "endpoint": "http://127.0.0.1:9/x",
        "id": "x",
        "message_id": "x",
        "subscription": "audit",
        "limit": "10",
    }
    if token is not None:
        fields["csrf_token"] = token
    posts = [
        rule
        for rule in signed_in.app.url_map.iter_rules()
        if rule.endpoint.startswith("console.") and "POST" in (rule.methods or ())
    ]
    assert len(posts) >= 10
    for rule in posts:
        path = rule.rule.replace("<name>", "jobs" if "queues" in rule.rule else "orders")
        path = path.replace("<subscription>", "audit")
        response = signed_in.client.post(path, data=fields)
        assert response.status_code == 403, path
        assert "CSRF" in response.text
    assert _state(signed_in) == before
    assert signed_in.client.get("/console/queues").status_code == 200  # still signed in


def test_a_token_from_another_session_is_refused(signed_in: Console, console: Console) -> None:
    _resources(signed_in)
    stranger = console.app.test_client()
    stranger_token = re.search(
        r'name="csrf_token" value="([^"]+)"', stranger.get("/console/sign-in").text
    )
    assert stranger_token
    response = signed_in.client.post(
        "/console/queues/jobs/send", data={"csrf_token": stranger_token.group(1), "body": "x"}
    )
    assert response.status_code == 403
    assert signed_in.store.queues.get_queue("jobs")[1].active == 1


def test_the_console_can_be_turned_off(open_database: OpenDatabase, tmp_path: Path) -> None:
    """``MNS_GATEWAY_CONSOLE=0``: /console/ is an MNS path like any other, signed or refused."""
    console = make_console(open_database, tmp_path, console=False)
    try:
        response = console.client.get("/console/sign-in")
        assert response.status_code == 400
        assert b"<Code>MissingAuthorizationHeader</Code>" in response.data
        assert "mns-console" not in console.app.extensions
    finally:
        console.oplog.close()
