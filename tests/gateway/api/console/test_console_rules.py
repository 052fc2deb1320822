"""The console obeys the API's rules (issue 33 findings 10 and 12): the endpoint switch and
allow-list, redirects that never leave the console nor name the Host header, and the console's
headers on every answer under ``/console``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway.auth.endpoint_acl import AclRule, EndpointAcl
from gateway.queues.records import QueueAttributes
from tests.gateway.api.console.conftest import Console

CONSOLE_HEADERS = ("Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options")


def _count(console: Console, queue: str) -> int:
    return console.store.queues.get_queue(queue)[1].active


@pytest.mark.parametrize(
    "acl",
    [EndpointAcl(enabled=False), EndpointAcl(rules=(AclRule("10.0.0.0/8"),))],
    ids=["disabled", "not-on-the-allow-list"],
)
def test_the_endpoint_switch_and_allow_list_hold_for_the_console(
    signed_in: Console, acl: EndpointAcl
) -> None:
    signed_in.store.queues.create_queue("jobs", QueueAttributes())
    signed_in.post("/console/queues/jobs/send", body="before", back="/console/queues/jobs")
    assert _count(signed_in, "jobs") == 1
    signed_in.store.control.change_endpoint(lambda _: acl)
    signed_in.clock.now += 2  # past the second a replica trusts the state it read
    sent = signed_in.post("/console/queues/jobs/send", body="after", back="/console/queues/jobs")
    assert sent.status_code == 403
    assert _count(signed_in, "jobs") == 1
    for page in ("/console/", "/console/queues/jobs", "/console/sign-in", "/console/nowhere"):
        response = signed_in.client.get(page)
        assert response.status_code == 403, page
        assert all(name in response.headers for name in CONSOLE_HEADERS), page
    signed_in.store.control.change_endpoint(lambda state: replace(state, enabled=True, rules=()))
    signed_in.clock.now += 2
    assert signed_in.client.get("/console/queues/jobs").status_code == 200


@pytest.mark.parametrize("field", ["back", "next"])
@pytest.mark.parametrize(
    "target",
    [
        "/console/queues\r\nSet-Cookie: x=1",
        "/console/\\evil.example",
        "//evil.example/",
        "/console/../admin/dead-letters",
        "/console/%2E%2e/healthz?x=1",
    ],
)
def test_a_bad_back_or_next_goes_to_the_overview(
    signed_in: Console, field: str, target: str
) -> None:
    signed_in.store.queues.create_queue("jobs", QueueAttributes())
    if field == "back":
        response = signed_in.post("/console/queues/jobs/send", body="hello", back=target)
        assert _count(signed_in, "jobs") == 1
    else:
        token = signed_in.token()
        response = signed_in.client.post(
            "/console/sign-in",
            query_string={"next": target},
            data={
                "csrf_token": token,
                "access_key_id": "console-key",
                "access_key_secret": "console-secret",
            },
        )
    assert response.status_code == 302
    assert response.headers["Location"] == "/console/"


def test_console_without_its_slash_is_redirected_without_the_host_header(
    console: Console,
) -> None:
    response = console.client.get("/console", headers={"Host": "evil.example"})
    assert response.status_code == 308
    assert response.headers["Location"] == "/console/"
    assert all(name in response.headers for name in CONSOLE_HEADERS)


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
def test_every_answer_under_the_console_has_its_headers(signed_in: Console, method: str) -> None:
    for path in ("/console/no/such/page", "/console/queues", "/console/static/none.js"):
        response = signed_in.client.open(path, method=method)
        assert response.status_code != 500, (method, path)
        assert all(name in response.headers for name in CONSOLE_HEADERS), (method, path)
        assert "xml" not in response.headers.get("Content-Type", ""), (method, path)
