"""An endpoint circuit that is not closed, where a person looks (issue 47): the Deliveries page
says a pending push waits for the circuit (not for a next attempt that never comes), the overview
flags the circuit, and a circuit an operator holds open shows no next probe, on the console, in
the admin API's document and in the CLI's description; on each backend.

The circuit is opened through the store on the console's settable clock, as the pushing worker
would: ten pushes to billing fail and its breaker opens."""

from __future__ import annotations

import html
import re

from gateway.breaker.state import State
from gateway.operations import endpoint_health
from gateway.operations.calls import local_caller
from gateway.operator_documents.endpoint_health import describe, health_document
from tests.gateway.api.console.conftest import Console
from tests.gateway.api.console.test_circuit_forms import TOPIC_PAGE, _fail_billing, _row, _topic

#: When billing's breaker lets its probe out: 30 s after it opened, at the console's T0.
NEXT_PROBE = "2026-05-28 20:27:10 UTC"


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def _billing_rows(console: Console) -> str:
    """The text of the Deliveries page's rows for billing (audit's push, claimed and never
    settled here, is pending on its own)."""
    page = _text(console.client.get("/console/deliveries?message_id=M3").text)
    return page.split("billing http", 1)[1]


def _hold_open(console: Console, subscription: str) -> None:
    response = console.post(
        "/console/topics/orders/circuit", subscription=subscription, override="open", back="/"
    )
    assert response.status_code == 302


def test_a_pending_push_behind_an_open_circuit_says_it_waits_for_it(signed_in: Console) -> None:
    _topic(signed_in)
    _fail_billing(signed_in)
    assert signed_in.store.deliveries.breakers()[0]["orders/billing"].state is State.OPEN
    page = _billing_rows(signed_in)
    assert "Pending, held by the endpoint's open circuit" in page, page
    assert f"the next probe is at {NEXT_PROBE}; attempts resume if it succeeds" in page
    assert "next attempt" not in page  # its due time has passed and means nothing now
    assert (
        'href="/console/topics/orders#circuit-title"'
        in signed_in.client.get("/console/deliveries?message_id=M3").text
    )

    _hold_open(signed_in, "billing")
    page = _billing_rows(signed_in)
    assert "held open by an operator: no attempt until it is released" in page
    assert NEXT_PROBE not in page


def test_a_pending_push_with_a_closed_circuit_shows_its_next_attempt(signed_in: Console) -> None:
    _topic(signed_in)
    _fail_billing(signed_in)
    signed_in.post("/console/topics/orders/circuit", subscription="billing", override="closed")
    page = _billing_rows(signed_in)
    assert "Pending: next attempt 2026-05-28 20:26:40 UTC" in page
    assert "held by" not in page


def test_the_overview_flags_circuits_not_closed(signed_in: Console) -> None:
    _topic(signed_in)
    page = _text(signed_in.client.get("/console/").text)
    assert "Endpoint circuits not closed" not in page
    _fail_billing(signed_in)
    for path in ("/console/", "/console/overview/live"):
        page = _text(signed_in.client.get(path).text)
        assert "Endpoint circuits not closed (1)" in page, page
        assert f"orders/billing : open, 10 waiting, next probe {NEXT_PROBE}" in page
    _hold_open(signed_in, "audit")
    page = _text(signed_in.client.get("/console/").text)
    assert "Endpoint circuits not closed (2)" in page
    assert "orders/audit : open, held open by an operator, 0 waiting" in page


def test_a_circuit_held_open_shows_no_next_probe(signed_in: Console) -> None:
    _topic(signed_in)
    _fail_billing(signed_in)
    assert NEXT_PROBE.removesuffix(" UTC") in _row(signed_in.client.get(TOPIC_PAGE).text, "billing")
    _hold_open(signed_in, "billing")
    row = _row(signed_in.client.get(TOPIC_PAGE).text, "billing")
    assert row == "open (override: open) 100% 10 none: held open", row
    operations = signed_in.app.extensions["mns"].operations
    health = endpoint_health.subscription_health(operations, local_caller(), "orders", "billing")
    document = health_document(health)
    assert document["NextProbeTime"] is None
    assert "next probe" not in describe(document)
    overview = _text(signed_in.client.get("/console/").text)
    assert "orders/billing : open, held open by an operator, 10 waiting" in overview
    assert NEXT_PROBE not in overview
