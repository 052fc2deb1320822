"""Operator events cannot be forged (issue 47): on the events topic
(``MNS_GATEWAY_BREAKER_EVENTS_TOPIC``) the tag ``EndpointCircuit`` is the gateway's alone, so a
receiver tells a genuine event by its signed ``x-mns-topic-name`` and ``x-mns-message-tag``
(docs/delivery.md#operator-events); through a running ``mns-gateway serve``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMeta

from gateway.breaker.events import EVENT_TAG, refuse_forged_event
from gateway.errors.mns import MNSError
from tests.conftest import FAST_RETRIES, RunningGateway, start_gateway
from tests.support.pushes import pushes_to
from tests.v4_signer import V4RawClient

EVENTS = "ops-events"
JSON_HEADERS = {"x-mns-version": "2026-04-09", "Content-Type": "application/json"}
FORGED = json.dumps(
    {"Event": EVENT_TAG, "TopicName": "orders", "SubscriptionName": "billing", "State": "open"}
)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    env = {**FAST_RETRIES, "MNS_GATEWAY_BREAKER_EVENTS_TOPIC": EVENTS}
    running = start_gateway(tmp_path_factory.mktemp("operator-events"), env)
    yield running
    running.stop()


def publish(gateway: RunningGateway, topic: str, body: str, tag: str | None) -> tuple[int, str]:
    tagged = f"<MessageTag>{tag}</MessageTag>" if tag is not None else ""
    message = f"<Message><MessageBody>{body}</MessageBody>{tagged}</Message>"
    response = gateway.raw().send("POST", f"/topics/{topic}/messages", message.encode())
    return response.status, response.error_code() or ""


def test_a_forged_event_is_refused_or_told_apart_and_a_genuine_one_is_marked(
    gateway: RunningGateway,
) -> None:
    account = gateway.account()
    account.get_topic(EVENTS).create(TopicMeta())
    account.get_topic("orders").create(TopicMeta())
    with pushes_to(gateway.url) as alerts, pushes_to(gateway.url) as billing:
        account.get_topic(EVENTS).get_subscription("alerts").subscribe(
            SubscriptionMeta(alerts.url + "/alerts", notify_content_format="JSON")
        )
        account.get_topic("orders").get_subscription("billing").subscribe(
            SubscriptionMeta(billing.url + "/billing")
        )
        # A client cannot put the events' tag on the events topic, in either API.
        assert publish(gateway, EVENTS, FORGED, EVENT_TAG) == (400, "InvalidArgument")
        raw = gateway.raw()
        json_api = V4RawClient(raw.host, raw.port, raw.key_id, raw.secret, dict(JSON_HEADERS))
        json_publish = json_api.send(
            "POST",
            f"/topics/{EVENTS}/messages",
            json.dumps({"MessageBody": FORGED, "MessageTag": EVENT_TAG}).encode(),
        )
        assert json_publish.status == 400, json_publish.body
        assert json.loads(json_publish.body)["Code"] == "InvalidArgument"
        # In the events' shape without their tag it is published, and told apart.
        assert publish(gateway, EVENTS, FORGED, None)[0] == 201
        # The tag is anyone's on any other topic.
        assert publish(gateway, "orders", "an order", EVENT_TAG)[0] == 201
        billing.wait_for(1)
        # A genuine event: an operator holds billing's circuit open.
        override = gateway.raw().send(
            "POST", "/admin/topics/orders/subscriptions/billing/circuit?override=open"
        )
        assert override.status == 200, override.body
        pushes = alerts.wait_for(2, timeout=20)

    genuine = [p for p in pushes if p.headers.get("x-mns-message-tag") == EVENT_TAG]
    forged = [p for p in pushes if p.headers.get("x-mns-message-tag") != EVENT_TAG]
    assert len(genuine) == len(forged) == 1
    assert json.loads(forged[0].message)["Event"] == EVENT_TAG  # the shape alone proves nothing
    event = json.loads(genuine[0].message)
    assert (event["TopicName"], event["SubscriptionName"], event["State"]) == (
        "orders",
        "billing",
        "open",
    )
    assert genuine[0].headers["x-mns-topic-name"] == EVENTS
    assert all(p.verified for p in pushes)  # both headers are covered by the signature


def test_the_rule_on_its_own() -> None:
    with pytest.raises(MNSError) as refused:
        refuse_forged_event(EVENTS, EVENT_TAG, EVENTS)
    assert refused.value.code == "InvalidArgument"
    refuse_forged_event(EVENTS, None, EVENTS)  # untagged: published
    refuse_forged_event(EVENTS, "other", EVENTS)
    refuse_forged_event("orders", EVENT_TAG, EVENTS)  # another topic
    refuse_forged_event(EVENTS, EVENT_TAG, "")  # no events topic: nothing is reserved
