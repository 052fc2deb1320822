"""Console actions are the API's operations: same validation and errors, same store effects,
same operation-log records; and the console's own ones (replay guard, redrive, deliver again,
live figures) on each backend."""

from __future__ import annotations

import base64
import json
import re

from gateway.delivery.records import Attempt, Settlement
from gateway.queues.dlq_policy import DeadLetterPolicy
from gateway.queues.records import MessageCounts, NewMessage, QueueAttributes
from gateway.store.base import Store
from gateway.topics.records import Subscription, TopicMessage
from tests.gateway.api.console.conftest import Console

HTML_ERROR = (
    "HTTP 502: <html><head><title>502 Bad Gateway</title><script>steal()</script></head>"
    "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
)


def _publish(store: Store, topic: str, body: str) -> TopicMessage:
    now = store.now_ms()
    message = TopicMessage(store.topics.new_message_id(now), topic, body, "MD5", now)
    store.topics.publish(message)
    return message


def dead_letter(store: Store, topic: str = "orders", sub: str = "audit") -> str:
    """Publish, claim and give up on one push: the dead letter's id."""
    if not store.topics.list_topics(topic, "", 1).items:
        store.topics.create_topic(topic, 65536, False)
        store.topics.subscribe(Subscription(topic, sub, "http://127.0.0.1:9/hook"))
    message = _publish(store, topic, "payload")
    jobs = store.deliveries.claim("tester", 60, 100, frozenset())
    (job,) = [j for j in jobs if j.message.id == message.id]
    attempt = Attempt(1, store.now_ms(), "http_error", 502, HTML_ERROR, 12.0)
    (filed,) = store.deliveries.settle("tester", [Settlement(job, attempt, dead_reason="retries")])
    assert filed is not None
    page = store.deliveries.list_dead_letters("", 1000)
    return next(d.id for d in page.items if d.message.id == message.id)


def test_send_is_the_apis_send_with_its_errors_and_log(signed_in: Console) -> None:
    store = signed_in.store
    store.queues.create_queue("jobs", QueueAttributes(logging_enabled=True))
    response = signed_in.post(
        "/console/queues/jobs/send", body="  hello <b>  ", priority="3", back="/console/queues/jobs"
    )
    assert response.status_code == 302 and response.headers["Location"] == "/console/queues/jobs"
    (message,) = store.queues.peek("jobs", 16)[1]
    assert (message.body, message.priority) == ("  hello <b>  ", 3)
    assert "Sent message" in signed_in.flashes("/console/queues/jobs")
    refused = signed_in.refused(
        "/console/queues/jobs/send", body="x", priority="99", back="/console/queues/jobs"
    )
    assert "InvalidArgument: The value of Priority should between 1 and 16" in refused
    refused = signed_in.refused("/console/queues/jobs/send", body="")
    assert "MessageBody is required" in refused
    refused = signed_in.refused("/console/queues/jobs/send", body="bell \x07")  # not in XML
    assert "MalformedXML" in refused
    assert len(store.queues.peek("jobs", 16)[1]) == 1
    records = [json.loads(line) for line in signed_in.oplog_records()]
    assert [r["Action"] for r in records] == ["SendMessage"]
    assert records[0]["QueueName"] == "jobs" and records[0]["MessageId"] == message.message_id


def test_attributes_peek_and_delete(signed_in: Console) -> None:
    store = signed_in.store
    store.queues.create_queue("jobs", QueueAttributes())
    store.queues.create_queue("jobs-dlq", QueueAttributes())
    signed_in.post(
        "/console/queues/jobs/attributes",
        visibility_timeout="45",
        dlq_target="jobs-dlq",
        dlq_max_receive_count="3",
        dlq_enabled="true",
    )
    attributes = store.queues.get_queue("jobs")[0].attributes
    assert attributes.visibility_timeout == 45
    assert attributes.dead_letter_policy == DeadLetterPolicy("jobs-dlq", 3, True)
    refused = signed_in.refused("/console/queues/jobs/attributes", visibility_timeout="0")
    assert "VisibilityTimeout should between 1 and 43200" in refused
    refused = signed_in.refused("/console/queues/jobs/attributes", dlq_target="jobs")
    assert "InvalidArgument" in refused
    store.queues.send("jobs", [NewMessage(base64.b64encode(b"\xffbin\xfe<i>").decode())])
    page = signed_in.client.get("/console/queues/jobs?peek=5&decode=base64").text
    assert "\ufffdbin\ufffd&lt;i&gt;" in page
    received = store.queues.receive("jobs", 1, 0).messages[0]
    refused = signed_in.refused("/console/queues/jobs/delete-message", receipt_handle="nonsense")
    assert "ReceiptHandleError" in refused
    signed_in.post("/console/queues/jobs/delete-message", receipt_handle=received.receipt_handle)
    assert store.queues.peek("jobs", 16)[1] == []


def test_topic_publish_subscribe_unsubscribe(signed_in: Console) -> None:
    store = signed_in.store
    store.topics.create_topic("orders", 65536, True)
    signed_in.post(
        "/console/topics/orders/subscribe",
        name="audit",
        endpoint="http://127.0.0.1:9/hook",
        filter_tag="vip",
        notify_strategy="EXPONENTIAL_DECAY_RETRY",
        notify_content_format="JSON",
    )
    subscription = store.topics.get_subscription("orders", "audit")
    assert (subscription.filter_tag, subscription.notify_content_format.value) == ("vip", "JSON")
    refused = signed_in.refused("/console/topics/orders/subscribe", name="bad", endpoint="ftp://x")
    assert "EndpointInvalid" in refused
    refused = signed_in.refused(
        "/console/topics/orders/subscribe", name="bad name!", endpoint="http://x/"
    )
    assert "SubscriptionNameInvalid" in refused
    signed_in.post("/console/topics/orders/publish", body="hi", tag="vip")
    assert store.deliveries.due_count() == 1
    page = signed_in.client.get("/console/topics/orders").text
    # The endpoint may wrap after its separators (<wbr>), nowhere else.
    assert "audit" in page and "http://127.0.0.1:9/hook" in page.replace("<wbr>", "")
    signed_in.post("/console/topics/orders/subscriptions/audit/unsubscribe")
    assert store.topics.list_subscriptions("orders", "", "", 10).items == []
    actions = [json.loads(line)["Action"] for line in signed_in.oplog_records()]
    assert actions == ["PublishMessage"]


def test_replay_guard(signed_in: Console) -> None:
    store = signed_in.store
    letter = dead_letter(store)
    page = signed_in.client.get(f"/console/dead-letters/{letter}").text
    assert "502 Bad Gateway nginx" in page and "steal()" not in page  # the error page as text
    signed_in.post("/console/dead-letters/replay", id=letter)
    assert store.deliveries.get_dead_letter(letter).replayed_at_ms == store.now_ms()
    assert store.deliveries.due_count() == 1
    signed_in.clock.now += 10
    signed_in.post("/console/dead-letters/replay", id=letter)  # a second click, or a stale page
    assert "DeadLetterAlreadyReplayed" in signed_in.flashes("/console/")
    assert store.deliveries.due_count() == 1
    seen = str(store.deliveries.get_dead_letter(letter).replayed_at_ms)
    # "again", but the page showed an older replay: still refused
    signed_in.post(
        "/console/dead-letters/replay", id=letter, again="yes", **{f"seen-{letter}": "1"}
    )
    assert store.deliveries.due_count() == 1
    signed_in.post(
        "/console/dead-letters/replay", id=letter, again="yes", **{f"seen-{letter}": seen}
    )
    assert store.deliveries.due_count() == 2
    # Each replay's delivery carries the console request's id: the delivery worker that makes
    # its first attempt writes the Replay record with it (tests/gateway/cli/test_replays.py).
    request_ids = store.database.read(
        lambda c: [
            r["replay_request_id"] for r in c.execute("SELECT replay_request_id FROM deliveries")
        ]
    )
    assert len(request_ids) == 2 and all(request_ids) and len(set(request_ids)) == 2


def test_replay_a_selection_and_filter(signed_in: Console) -> None:
    store = signed_in.store
    first, second = dead_letter(store), dead_letter(store, "billing", "crm")
    listing = signed_in.client.get("/console/dead-letters?topic=billing").text
    assert second in listing and first not in listing
    listing = signed_in.client.get("/console/dead-letters?subscription=audit").text
    assert first in listing and second not in listing
    assert first not in signed_in.client.get("/console/dead-letters?since=2100-01-01T00:00").text
    assert signed_in.client.get("/console/dead-letters?since=yesterday").status_code == 400
    signed_in.client.post(
        "/console/dead-letters/replay",
        data={"csrf_token": signed_in.token("/console/"), "id": [first, second]},
    )
    assert store.deliveries.due_count() == 2


def test_redrive_moves_dead_lettered_messages_back(signed_in: Console) -> None:
    store = signed_in.store
    store.queues.create_queue("dlq", QueueAttributes())
    policy = DeadLetterPolicy("dlq", 1, True)
    store.queues.create_queue(
        "jobs", QueueAttributes(visibility_timeout=1, dead_letter_policy=policy)
    )
    store.queues.send("jobs", [NewMessage("again please")])
    store.queues.send("dlq", [NewMessage("sent to the dlq directly")])
    store.queues.receive("jobs", 1, 0)
    signed_in.clock.now += 2
    store.queues.receive("jobs", 1, 0)  # the second receive moves it
    assert store.queues.get_queue("dlq")[1].active == 2
    signed_in.post("/console/queues/dlq/redrive", limit="10")
    assert "Redrove 1 to jobs" in signed_in.flashes("/console/")
    (back,) = store.queues.peek("jobs", 16)[1]
    assert back.body == "again please"
    assert "DLQSourceArn" not in json.dumps(back.properties)
    (left,) = store.queues.peek("dlq", 16)[1]
    assert left.body == "sent to the dlq directly"


def test_deliveries_page_and_deliver_again(signed_in: Console) -> None:
    store = signed_in.store
    letter = dead_letter(store)
    message_id = store.deliveries.get_dead_letter(letter).message.id
    page = signed_in.client.get(f"/console/deliveries?message_id={message_id}").text
    assert letter in page and "502 Bad Gateway" in page and "<script>steal" not in page
    signed_in.post("/console/deliveries/again", message_id=message_id, subscription="audit")
    assert store.deliveries.due_count() == 1
    assert (
        "Pending: next attempt"
        in signed_in.client.get(f"/console/deliveries?message_id={message_id}").text
    )
    refused = signed_in.refused(
        "/console/deliveries/again", message_id="nope", subscription="audit"
    )
    assert "MessageNotExist" in refused


def test_live_figures_and_health(signed_in: Console) -> None:
    store = signed_in.store
    dead_letter(store)
    message = _publish(store, "orders", "ok")
    (job,) = [
        j for j in store.deliveries.claim("w", 60, 10, frozenset()) if j.message.id == message.id
    ]
    store.deliveries.settle("w", [Settlement(job, Attempt(1, store.now_ms(), "success", 200))])
    overview = signed_in.client.get("/console/").text
    assert "50.0 %" in overview and "<svg" in overview
    assert "1 successful" in overview and "1 failed" in overview
    topic = signed_in.client.get("/console/topics/orders").text
    assert '<td class="num">0</td>' in topic  # failures in a row, reset by the success
    live = signed_in.client.get("/console/overview/live")
    assert live.status_code == 200 and "<html" not in live.text


def test_list_counts_agree_with_get_queue_attributes(signed_in: Console) -> None:
    """The console counts many queues at once its own way; the numbers are the API's."""
    store = signed_in.store
    for name in ("a-queue", "b-queue", "empty"):
        store.queues.create_queue(name, QueueAttributes())
    store.queues.send("a-queue", [NewMessage(f"m{i}", priority=1 + i % 16) for i in range(12)])
    store.queues.send("a-queue", [NewMessage("later", delay_seconds=60)])
    store.queues.send("b-queue", [NewMessage("b")])
    store.queues.receive("a-queue", 5, 0)
    page = signed_in.client.get("/console/queues").text
    for name in ("a-queue", "b-queue", "empty"):
        counts = store.queues.get_queue(name)[1]
        row = page.split(f">{name}</a>")[1].split("</tr>")[0]
        shown = [int(n) for n in re.findall(r'<td class="num">(\d+)</td>', row)]
        assert shown == [counts.active, counts.inactive, counts.delayed], name
    assert store.queues.get_queue("a-queue")[1] == MessageCounts(7, 5, 1)
    overview = signed_in.client.get("/console/").text
    assert "Messages waiting</dt><dd>8<" in overview and "In flight</dt><dd>5<" in overview
