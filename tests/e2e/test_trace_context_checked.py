"""Trace context from outside, parsed and written anew before it goes anywhere (issue 47), with a
real ``mns-gateway serve`` tracing to a collector in the test: a publisher's ``traceparent``
SystemProperty holding CR/LF cannot open a healthy endpoint's breaker, and a request's
``tracestate`` past W3C's limits is not stored with the message nor pushed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMeta

from gateway.protocol.trace_context import MAX_TRACESTATE_CHARS
from tests.conftest import FAST_RETRIES, RunningGateway, start_gateway
from tests.e2e.test_tracing import otel_env
from tests.otlp_collector import OtlpCollector
from tests.support.pushes import pushes_to

pytestmark = pytest.mark.otel

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
GOOD = f"00-{TRACE_ID}-b7ad6b7169203331-01"
#: Each as XML character references: an XML parser keeps them as CR and LF.
POISONED = (
    f"{GOOD}&#13;&#10;X-Injected: 1",
    f"{GOOD}&#13;&#10;",
    f"{GOOD}&#10;",
    "&#13;&#10;",
)
MESSAGES = 12  # past the breaker's minimum of 10 attempts


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    with OtlpCollector() as collector:
        env = {**FAST_RETRIES, **otel_env(collector, "mns-gateway")}
        running = start_gateway(tmp_path_factory.mktemp("trace-context"), env)
        yield running
        running.stop()


def message(body: str, traceparent: str | None = None) -> bytes:
    system = (
        "<SystemProperties><SystemPropertyValue><Name>traceparent</Name>"
        f"<Value>{traceparent}</Value><Type>STRING</Type></SystemPropertyValue></SystemProperties>"
        if traceparent is not None
        else ""
    )
    return f"<Message><MessageBody>{body}</MessageBody>{system}</Message>".encode()


def health(gateway: RunningGateway, topic: str) -> dict[str, Any]:
    response = gateway.raw().send("GET", f"/admin/topics/{topic}/subscriptions/hook/health")
    assert response.status == 200, response.body
    return json.loads(response.body)  # type: ignore[no-any-return]


def test_a_poisoned_traceparent_neither_fails_its_pushes_nor_opens_the_breaker(
    gateway: RunningGateway, unique: str
) -> None:
    account = gateway.account()
    account.get_topic(unique).create(TopicMeta())
    raw = gateway.raw()
    with pushes_to(gateway.url) as endpoint:  # answers 204, verifying every signature
        account.get_topic(unique).get_subscription("hook").subscribe(
            SubscriptionMeta(endpoint.url + "/hook")
        )
        for n in range(MESSAGES):
            body = message(f"poisoned {n}", POISONED[n % len(POISONED)])
            assert raw.send("POST", f"/topics/{unique}/messages", body).status == 201
        poisoned = endpoint.wait_for(MESSAGES, timeout=20)
        assert raw.send("POST", f"/topics/{unique}/messages", message("good", GOOD)).status == 201
        pushes = endpoint.wait_for(MESSAGES + 1, timeout=20)

    assert sorted(push.message for push in poisoned) == sorted(
        f"poisoned {n}" for n in range(MESSAGES)
    )
    for push in pushes:
        # The creation context is written anew, or dropped when it does not parse.
        creation = push.headers.get("mns-creation-traceparent")
        assert creation == (GOOD if push.message == "good" else None), push.message
        assert push.headers["traceparent"].startswith("00-")  # the attempt's own, as always
    document = health(gateway, unique)
    assert document["State"] == "closed"
    assert document["Failures"] == 0  # not one push counted against the endpoint


def test_a_tracestate_past_the_limits_is_cut_before_it_is_stored_or_pushed(
    gateway: RunningGateway, unique: str
) -> None:
    account = gateway.account()
    raw = gateway.raw()
    account.get_topic(unique).create(TopicMeta())
    # 32 members of 259 characters each: 8,319 characters, the issue's.
    huge = ",".join(f"k{n:02d}={'v' * 255}" for n in range(32))
    small = ["a=1", "b=2"]
    cut = ",".join([*small, *(f"m{n}={'x' * 100}" for n in range(6)), huge[:259]])
    headers = {"traceparent": GOOD}
    with pushes_to(gateway.url) as endpoint:
        account.get_topic(unique).get_subscription("hook").subscribe(
            SubscriptionMeta(endpoint.url + "/hook")
        )
        for state in (huge, cut):
            sent = raw.send(
                "POST",
                f"/topics/{unique}/messages",
                message(f"state {len(state)}"),
                headers={**headers, "tracestate": state},
            )
            assert sent.status == 201, sent.body
        pushes = endpoint.wait_for(2, timeout=20)

    by_body = {push.message: push for push in pushes}
    assert len(huge) == 8319
    # Too long: its large members go from the end until the rest fits.
    assert by_body[f"state {len(huge)}"].headers["tracestate"] == huge[:259]
    # The large member goes first, then members from the end, until it fits in 512.
    pushed = by_body[f"state {len(cut)}"].headers["tracestate"]
    assert pushed == ",".join([*small, *(f"m{n}={'x' * 100}" for n in range(4))])
    assert len(pushed) <= MAX_TRACESTATE_CHARS


def test_a_stored_tracestate_is_within_the_limits(gateway: RunningGateway, unique: str) -> None:
    raw = gateway.raw()
    assert raw.send("PUT", f"/queues/{unique}", b"<Queue/>").status == 201
    huge = ",".join(f"k{n:02d}={'v' * 255}" for n in range(32))
    fits = "a=1,rojo=00f067aa0ba902b7"
    for state in (huge, fits):
        sent = raw.send(
            "POST",
            f"/queues/{unique}/messages",
            message("b"),
            headers={"traceparent": GOOD, "tracestate": state},
        )
        assert sent.status == 201, sent.body
    text = ""
    deadline = time.monotonic() + 10
    while text.count("<MessageId>") < 2 and time.monotonic() < deadline:
        received = raw.send("GET", f"/queues/{unique}/messages?numOfMessages=2&waitseconds=1")
        if received.status == 200:
            text += received.body.decode()
    assert text.count("<MessageId>") == 2
    assert huge[:260] not in text  # the 8,319 characters went nowhere
    assert f"<Value>{huge[:259]}</Value>" in text  # what fits in 512 did
    assert "<Value>a=1,rojo=00f067aa0ba902b7</Value>" in text  # a valid one is kept
