"""Endpoint circuits on the topic's page: each subscription's breaker (state, failure rate,
attempts skipped, next probe), and the form that forces one closed, holds it open or lets it
decide, CSRF-guarded; on each backend (docs/delivery.md#endpoint-health)."""

from __future__ import annotations

import html
import re

from gateway.breaker.state import Override, State
from gateway.delivery.records import Attempt, Settlement
from gateway.topics.records import Subscription, TopicMessage
from tests.gateway.api.console.conftest import Console

TOPIC_PAGE = "/console/topics/orders"


def _topic(console: Console) -> None:
    topics = console.store.topics
    topics.create_topic("orders", 65536, True)
    for name in ("audit", "billing"):
        topics.subscribe(Subscription("orders", name, f"http://127.0.0.1:9/{name}"))


def _row(page: str, name: str) -> str:
    section = page.split('id="circuit-title"', 1)[1]
    match = re.search(rf"<tr[^>]*>\s*<td class=\"wrap\"[^>]*>{name}</td>(.*?)</tr>", section, re.S)
    assert match, f"no circuit row for {name}"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(1))).strip()


def _fail_billing(console: Console) -> None:
    """Ten failed pushes to billing: its breaker opens."""
    store = console.store
    messages = [TopicMessage(f"M{n}", "orders", "b", "X", store.now_ms()) for n in range(10)]
    store.topics.publish_all(messages)
    jobs = store.deliveries.claim("c", 60, 100, frozenset())
    failed = [
        Settlement(j, Attempt(1, store.now_ms(), "http_error", 503), retry_at_ms=store.now_ms())
        for j in jobs
        if j.subscription.name == "billing"
    ]
    store.deliveries.settle("c", failed)


def test_the_topic_page_shows_each_endpoints_circuit(signed_in: Console) -> None:
    _topic(signed_in)
    _fail_billing(signed_in)
    page = signed_in.client.get(TOPIC_PAGE).text
    assert _row(page, "audit") == "closed 0% 0 -"
    assert _row(page, "billing").startswith("open 100% 10 ")  # and when the probe goes


def test_an_operator_holds_a_circuit_open_and_closes_it(signed_in: Console) -> None:
    _topic(signed_in)
    response = signed_in.post(
        "/console/topics/orders/circuit", subscription="audit", override="open", back=TOPIC_PAGE
    )
    assert response.status_code == 302 and response.headers["Location"] == TOPIC_PAGE
    assert "The circuit of audit is open (override: open)." in html.unescape(
        signed_in.flashes(TOPIC_PAGE)
    )
    breaker = signed_in.store.deliveries.breakers()[0]["orders/audit"]
    assert breaker.override is Override.OPEN
    assert _row(signed_in.client.get(TOPIC_PAGE).text, "audit") == (
        "open (override: open) 0% 0 none: held open"
    )
    signed_in.post(
        "/console/topics/orders/circuit", subscription="audit", override="auto", back=TOPIC_PAGE
    )
    assert signed_in.store.deliveries.breakers()[0] == {}

    _fail_billing(signed_in)
    signed_in.post(
        "/console/topics/orders/circuit", subscription="billing", override="closed", back=TOPIC_PAGE
    )
    breaker = signed_in.store.deliveries.breakers()[0]["orders/billing"]
    assert (breaker.state, breaker.override) == (State.CLOSED, Override.CLOSED)


def test_a_bad_override_or_subscription_is_refused(signed_in: Console) -> None:
    _topic(signed_in)
    refused = signed_in.refused(
        "/console/topics/orders/circuit", subscription="audit", override="x", back=TOPIC_PAGE
    )
    assert "closed, open or auto" in html.unescape(refused)
    refused = signed_in.refused(
        "/console/topics/orders/circuit", subscription="nope", override="open", back=TOPIC_PAGE
    )
    assert "SubscriptionNotExist" in html.unescape(refused)
    assert signed_in.store.deliveries.breakers()[0] == {}


def test_the_form_needs_its_csrf_token(signed_in: Console) -> None:
    _topic(signed_in)
    response = signed_in.client.post(
        "/console/topics/orders/circuit", data={"subscription": "audit", "override": "open"}
    )
    assert response.status_code == 403
    assert signed_in.store.deliveries.breakers()[0] == {}


def test_the_topic_list_flags_topics_with_an_open_circuit(signed_in: Console) -> None:
    _topic(signed_in)
    signed_in.store.topics.create_topic("quiet", 65536, False)
    _fail_billing(signed_in)
    page = signed_in.client.get("/console/topics").text
    assert page.count("(endpoint circuit open)") == 1
    assert re.search(r"orders</a> \(endpoint circuit open\)", page)
