"""The operation-log record of a push, a replay and a dead letter
(gateway/delivery/push_records.py)."""

from __future__ import annotations

from gateway.delivery.push_records import PushFacts, push_record
from gateway.delivery.records import Attempt, DeliveryJob, Filed
from gateway.observability.operations import Action
from gateway.topics.records import Subscription, TopicMessage

JOB = DeliveryJob(
    "d1",
    0,
    TopicMessage("M1", "orders", "body", "X", 1_000),
    Subscription("orders", "hook", "http://127.0.0.1:9/notify"),
    "http://127.0.0.1:9",
)
COMMON = {
    "Time": 5_000,
    "AccountId": "1234",
    "TopicName": "orders",
    "SubscriptionName": "hook",
    "MessageId": "M1",
    "Endpoint": "http://127.0.0.1:9/notify",
    "PublishTime": 1_000,
}


def record(attempt: Attempt | None, facts: PushFacts) -> dict[str, object]:
    return push_record(JOB, attempt, facts, now_ms=5_000, account_id="1234")


def test_a_failed_attempt_says_when_it_is_due_again_and_its_trace() -> None:
    attempt = Attempt(1, 4_990, "http_error", 503, "busy", 7)
    facts = PushFacts(next_attempt_ms=15_000, trace_id="0af7651916cd43dd8448eb211c80319c")
    assert record(attempt, facts) == COMMON | {
        "Action": "PushMessage",
        "Attempt": 1,
        "Outcome": "http_error",
        "StatusCode": 503,
        "LatencyMs": 7,
        "Error": "busy",
        "NextAttemptTime": 15_000,
        "TraceId": "0af7651916cd43dd8448eb211c80319c",
    }


def test_a_dead_letter_names_its_reason_and_the_queue_it_was_filed_in() -> None:
    facts = PushFacts(Action.DEAD_LETTER, "retries exhausted", Filed("L1", "dlq", "DM1"))
    assert record(None, facts) == COMMON | {
        "Action": "DeadLetter",
        "Error": "retries exhausted",
        "DeadLetterQueue": "dlq",
        "DeadLetterMessageId": "DM1",
    }


def test_a_replay_carries_its_request_id_and_a_letter_without_a_queue_message_no_queue() -> None:
    assert record(None, PushFacts(Action.REPLAY, request_id="R1")) == COMMON | {
        "Action": "Replay",
        "RequestId": "R1",
    }
    facts = PushFacts(Action.DEAD_LETTER, "gone", Filed("L1", "dlq", None))
    assert "DeadLetterQueue" not in record(None, facts)
