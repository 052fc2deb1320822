"""Traces from publish to handler (issue 37), with real processes: this test's publisher with
the OpenTelemetry SDK, the gateway (``mns-gateway serve``) and a Flask app with the receiver
(tests/e2e/traced_receiver_app.py), all exporting OTLP over HTTP to a collector in the test
(tests/otlp_collector.py) that decodes what it gets with ``opentelemetry-proto``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.message_property import MessageSystemPropertyValue, SystemPropertyName
from mns.queue import Message, QueueMeta
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway, start_gateway
from tests.otlp_collector import OtlpCollector, ReceivedSpan
from tests.support.oplog import wait_for_records

pytestmark = pytest.mark.otel

REPO = Path(__file__).resolve().parents[2]


def otel_env(collector: OtlpCollector, service: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": service,
        "OTEL_BSP_SCHEDULE_DELAY": "50",  # ms: spans out at once, not every 5 s
    }


@pytest.fixture(scope="module")
def collector() -> Iterator[OtlpCollector]:
    with OtlpCollector() as running:
        yield running


@pytest.fixture(scope="module")
def oplog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("oplog")


@pytest.fixture(scope="module")
def gateway(
    collector: OtlpCollector, tmp_path_factory: pytest.TempPathFactory, oplog_dir: Path
) -> Iterator[RunningGateway]:
    env = {**otel_env(collector, "mns-gateway"), "MNS_GATEWAY_LOG_DIR": str(oplog_dir)}
    running = start_gateway(tmp_path_factory.mktemp("traced"), env)
    yield running
    running.stop()


def logged(oplog_dir: Path, message_id: str, count: int) -> list[dict[str, object]]:
    """The operation-log records of ``message_id``, once there are ``count`` of them."""
    return wait_for_records(oplog_dir, lambda r: r.get("MessageId") == message_id, count, 10)


@pytest.fixture(scope="module")
def receiver_url(collector: OtlpCollector, gateway: RunningGateway) -> Iterator[str]:
    env = {**os.environ, **otel_env(collector, "orders-app"), "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.traced_receiver_app", gateway.url],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/mns/notifications"
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
def publisher(collector: OtlpCollector) -> Iterator[TracerProvider]:
    """The publishing application's own SDK, exporting to the same collector."""
    provider = TracerProvider(resource=Resource.create({"service.name": "shop"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{collector.endpoint}/v1/traces"))
    )
    yield provider
    provider.shutdown()


def traceparent(span: object) -> str:
    from opentelemetry import trace

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(
        carrier,
        context=trace.set_span_in_context(span),  # type: ignore[arg-type]
    )
    return carrier["traceparent"]


def one(spans: list[ReceivedSpan], **wanted: object) -> ReceivedSpan:
    found = [s for s in spans if all(_has(s, k, v) for k, v in wanted.items())]
    assert len(found) == 1, f"{wanted}: {[(s.name, s.attributes) for s in found]}"
    return found[0]


def _has(span: ReceivedSpan, key: str, value: object) -> bool:
    return (
        getattr(span, key) == value
        if key in ("name", "service", "trace_id")
        else (span.attributes.get(key.replace("__", ".")) == value)
    )


def handled(message_id: str):  # type: ignore[no-untyped-def]
    """The handler's span and both attempts' (the gateway exports after the answer)."""

    def found(spans: list[ReceivedSpan]) -> bool:
        of_message = [s for s in spans if s.attributes.get("messaging.message.id") == message_id]
        outcomes = [s.attributes.get("messaging.smq.handler.outcome") for s in of_message]
        attempts = [s for s in of_message if s.attributes.get("messaging.smq.push.outcome")]
        return "handled" in outcomes and len(attempts) >= 2

    return found


@pytest.mark.parametrize("fmt", ["XML", "JSON", "SIMPLIFIED"])
def test_one_trace_from_publisher_to_handler(
    collector: OtlpCollector,
    gateway: RunningGateway,
    receiver_url: str,
    publisher: TracerProvider,
    oplog_dir: Path,
    fmt: str,
) -> None:
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = account.get_topic(f"orders-{fmt.lower()}")
    topic.create(TopicMeta(logging_enabled=True))
    topic.get_subscription("app").subscribe(
        SubscriptionMeta(receiver_url, notify_content_format=fmt)
    )
    with publisher.get_tracer("shop").start_as_current_span("checkout") as checkout:
        message = TopicMessage("order 42", "paid")
        message.add_system_property(
            SystemPropertyName.TRACEPARENT,
            MessageSystemPropertyValue("STRING", traceparent(checkout)),
        )
        message_id = topic.publish_message(message).message_id
    trace_id = f"{checkout.get_span_context().trace_id:032x}"
    root = f"{checkout.get_span_context().span_id:016x}"

    spans = [s for s in collector.wait_for(handled(message_id)) if s.trace_id == trace_id]
    # publisher -> the gateway's publish: a child of the context the message carries
    publish = one(spans, service="mns-gateway", name=f"send orders-{fmt.lower()}")
    assert publish.parent_span_id == root
    assert publish.attributes["messaging.message.id"] == message_id
    assert publish.attributes["messaging.system"] == "smq"
    assert publish.attributes["messaging.smq.operation"] == "PublishMessage"
    assert publish.attributes["messaging.smq.message.tag"] == "paid"
    # -> each attempt: children of (and linked to) the creation context, the publisher's
    failed = one(spans, name="push app", messaging__smq__push__attempt=1)
    retried = one(spans, name="push app", messaging__smq__push__attempt=2)
    for attempt in (failed, retried):
        assert attempt.parent_span_id == root and (trace_id, root) in attempt.links
        assert attempt.attributes["messaging.smq.push.endpoint"] == receiver_url
    assert failed.error and failed.attributes["error.type"] == "http_error"
    assert failed.attributes["http.response.status_code"] == 500
    assert failed.attributes["messaging.smq.push.retry_at"] > 0
    assert not retried.error and retried.attributes["http.response.status_code"] == 204
    # -> the handler: a process span per push, under the attempt that carried it
    refused = one(spans, service="orders-app", messaging__smq__handler__outcome="handler_failed")
    done = one(spans, service="orders-app", messaging__smq__handler__outcome="handled")
    assert refused.parent_span_id == failed.span_id and refused.error
    assert done.parent_span_id == retried.span_id and not done.error
    assert done.name == f"process orders-{fmt.lower()}" and done.kind == "consumer"
    assert (trace_id, root) in done.links  # linked to the creation context
    assert done.attributes["messaging.message.id"] == message_id
    # the operation log names the trace of the publish and of each attempt
    records = logged(oplog_dir, message_id, 3)
    actions = sorted(str(record["Action"]) for record in records)
    assert actions == ["PublishMessage", "PushMessage", "PushMessage"]
    assert {record["TraceId"] for record in records} == {trace_id}


def test_a_queue_message_sent_received_and_deleted(
    collector: OtlpCollector, gateway: RunningGateway, publisher: TracerProvider
) -> None:
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    queue = account.get_queue("traced-jobs")
    queue.create(QueueMeta())
    queue.send_message(Message("no context of its own"))  # the gateway's send span's is added
    with publisher.get_tracer("shop").start_as_current_span("enqueue") as enqueue:
        message = Message("job 7")
        message.add_system_property(
            SystemPropertyName.TRACEPARENT,
            MessageSystemPropertyValue("STRING", traceparent(enqueue)),
        )
        sent_id = queue.send_message(message).message_id
    trace_id = f"{enqueue.get_span_context().trace_id:032x}"
    root = f"{enqueue.get_span_context().span_id:016x}"

    first = queue.receive_message()
    own = first.get_system_properties()[SystemPropertyName.TRACEPARENT].get_raw_value()
    queue.delete_message(first.receipt_handle)
    second = queue.receive_message()
    assert second.message_id == sent_id
    # the publisher's own traceparent comes back untouched
    assert second.get_system_properties()[SystemPropertyName.TRACEPARENT].get_raw_value() == (
        traceparent(enqueue)
    )
    queue.delete_message(second.receipt_handle)

    def settled(spans: list[ReceivedSpan]) -> bool:
        return sum(s.name == "settle traced-jobs" for s in spans) >= 2

    spans = collector.wait_for(settled)
    send = one(spans, name="send traced-jobs", messaging__message__id=sent_id)
    assert (send.trace_id, send.parent_span_id) == (trace_id, root)
    assert send.attributes["messaging.operation.type"] == "send"
    # the message sent without a context carries the gateway's send span's
    plain = one(spans, name="send traced-jobs", messaging__message__id=first.message_id)
    assert own.startswith(f"00-{plain.trace_id}-{plain.span_id}-")
    receive = one(spans, name="receive traced-jobs", messaging__message__id=sent_id)
    assert receive.attributes["messaging.operation.type"] == "receive"
    assert (trace_id, root) in receive.links  # linked to the creation context
    assert receive.attributes["messaging.smq.receipt_handles"] == [second.receipt_handle]
    settle = one(
        spans, name="settle traced-jobs", messaging__smq__receipt_handles=[second.receipt_handle]
    )
    assert settle.attributes["messaging.operation.type"] == "settle"
    assert settle.attributes["messaging.smq.operation"] == "DeleteMessage"


def test_the_json_api_batch_entries_are_create_spans(
    collector: OtlpCollector, gateway: RunningGateway
) -> None:
    """BatchSendMessage through the JSON API's SDK: a ``send`` span and a ``create`` span per
    entry, each entry carrying its own ``create`` context; receive, visibility change and delete
    are ``receive`` and ``settle`` spans."""
    from alibabacloud_smqproxy20260409 import models as m

    from tests.smq_sdk import smq_client

    Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue("json-jobs").create(
        QueueMeta()
    )
    smq = smq_client(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    entries = [m.BatchSendMessageRequestMessages(message_body=body) for body in ("a", "b")]
    smq.batch_send_message("json-jobs", m.BatchSendMessageRequest(messages=entries))
    request = m.BatchReceiveMessageRequest(num_of_messages=2, waitseconds=1)
    received = smq.batch_receive_message("json-jobs", request).body.messages
    changed = smq.change_message_visibility(
        "json-jobs",
        m.ChangeMessageVisibilityRequest(
            receipt_handle=received[0].receipt_handle, visibility_timeout=60
        ),
    ).body
    handles = [changed.receipt_handle, received[1].receipt_handle]
    smq.batch_delete_message("json-jobs", m.BatchDeleteMessageRequest(receipt_handles=handles))

    def settled(spans: list[ReceivedSpan]) -> bool:
        return sum(s.name == "settle json-jobs" for s in spans) >= 2

    spans = collector.wait_for(settled)
    send = one(spans, name="send json-jobs")
    assert send.attributes["messaging.batch.message_count"] == 2
    creates = [s for s in spans if s.name == "create json-jobs"]
    assert len(creates) == 2 and all(c.parent_span_id == send.span_id for c in creates)
    assert all(c.kind == "producer" and c.trace_id == send.trace_id for c in creates)
    receive = one(spans, name="receive json-jobs")
    assert receive.attributes["messaging.smq.operation"] == "BatchReceiveMessage"
    assert receive.attributes["messaging.batch.message_count"] == 2
    # each message came back linked to the create span of its own entry
    assert {span_id for _, span_id in receive.links} == {c.span_id for c in creates}
    visibility = one(
        spans, name="settle json-jobs", messaging__smq__operation=("ChangeMessageVisibility")
    )
    assert visibility.attributes["messaging.smq.message.next_visible_time"] == (
        changed.next_visible_time
    )
    deleted = one(spans, name="settle json-jobs", messaging__smq__operation="BatchDeleteMessage")
    assert deleted.attributes["messaging.smq.receipt_handles"] == handles


def test_a_request_traceparent_is_the_parent_and_every_operation_has_a_span(
    collector: OtlpCollector, gateway: RunningGateway
) -> None:
    """A caller whose HTTP client propagates context (a ``traceparent`` header) gets the
    gateway's span as a child, before the message's own SystemProperty; an error answer marks
    the span with its MNS code; operations that are not message operations get spans too."""
    raw = gateway.raw()
    caller = "00-5b8efff798038103d269b633813fc60c-eee19b7ec3c1b174-01"
    assert raw.send("PUT", "/queues/header-jobs", b"<Queue/>").status == 201
    body = (
        b"<Message><MessageBody>x</MessageBody><SystemProperties><SystemPropertyValue>"
        b"<Name>traceparent</Name><Value>00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        b"</Value><Type>STRING</Type></SystemPropertyValue></SystemProperties></Message>"
    )
    sent = raw.send("POST", "/queues/header-jobs/messages", body, {"traceparent": caller})
    assert sent.status == 201
    missing = raw.send(
        "DELETE", "/queues/header-jobs/messages?ReceiptHandle=nope", headers={"traceparent": caller}
    )
    assert missing.status >= 400

    def found(spans: list[ReceivedSpan]) -> bool:
        names = [s.name for s in spans if s.trace_id == caller.split("-")[1]]
        return "send header-jobs" in names and "settle header-jobs" in names

    spans = [s for s in collector.wait_for(found) if s.trace_id == caller.split("-")[1]]
    send = one(spans, name="send header-jobs")
    assert send.parent_span_id == "eee19b7ec3c1b174"
    settle = one(spans, name="settle header-jobs")
    assert settle.error and settle.attributes["error.type"] in (
        "ReceiptHandleError",
        "MessageNotExist",
    )
    created = collector.wait_for(lambda got: any(s.name == "PUT /queues/<name>" for s in got))
    assert any(s.name == "PUT /queues/<name>" and s.kind == "server" for s in created)
