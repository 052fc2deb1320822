"""Input side of the pipeline: typing raw fields, skipping bad records, the time window, and
following a message through receipt handles."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, Row

from gateway.pipeline.transforms import parsing
from tests.gateway.pipeline.conftest import Records
from tests.gateway.pipeline.frames import assert_frames_equal

RawFactory = Callable[[Records], DataFrame]
EventFactory = Callable[[Records], DataFrame]

# 2024-01-01 00:00:00 UTC
T0 = 1_704_067_200_000


def test_time_is_read_from_numbers_numeric_strings_and_date_strings(make_raw: RawFactory) -> None:
    raw = make_raw(
        [
            {"Time": str(T0), "Action": "SendMessage"},
            {"Time": f"{T0}.0", "Action": "SendMessage"},
            {"Time": " 1704067200250 ", "Action": "SendMessage"},
            {"Time": "2024-01-01 00:00:01.500", "Action": "SendMessage"},
            {"Time": "2024-01-01 00:00:02", "Action": "SendMessage"},
            {"Time": "2024-01-01T00:00:03Z", "Action": "SendMessage"},
            {"Time": "yesterday", "Action": "SendMessage"},
        ]
    )
    parsed = parsing.parse_records(raw).select("time_ms")
    assert_frames_equal(
        parsed,
        [
            Row(time_ms=T0),
            Row(time_ms=T0),
            Row(time_ms=T0 + 250),
            Row(time_ms=T0 + 1500),
            Row(time_ms=T0 + 2000),
            Row(time_ms=T0 + 3000),
            Row(time_ms=None),
        ],
    )


def test_numbers_strings_and_empty_values_are_normalised(make_raw: RawFactory) -> None:
    raw = make_raw(
        [
            {
                "Time": str(T0),
                "Action": "PushMessage",
                "MessageId": "",
                "Attempt": "2",
                "StatusCode": "503.0",
                "LatencyMs": "12.7",
                "Outcome": "HTTP_ERROR",
                "DequeueCount": "many",
            }
        ]
    )
    parsed = parsing.parse_records(raw).select(
        "message_id", "attempt", "status_code", "latency_ms", "outcome", "dequeue_count"
    )
    assert_frames_equal(
        parsed,
        [
            Row(
                message_id=None,
                attempt=2,
                status_code=503,
                latency_ms=12,
                outcome="http_error",
                dequeue_count=None,
            )
        ],
    )


def test_usable_events_drop_malformed_and_records_without_time_or_action(
    make_raw: RawFactory,
) -> None:
    raw = make_raw(
        [
            {"Time": str(T0), "Action": "SendMessage", "MessageId": "kept"},
            {"_corrupt_record": "{not json"},
            {"Time": "never", "Action": "SendMessage", "MessageId": "no-time"},
            {"Time": str(T0), "MessageId": "no-action"},
        ]
    )
    events = parsing.usable_events(parsing.parse_records(raw))
    assert_frames_equal(events.select("message_id"), [Row(message_id="kept")])


def test_time_window_includes_since_and_excludes_until(make_events: EventFactory) -> None:
    events = make_events([{"time_ms": T0 + offset, "action": "SendMessage"} for offset in range(4)])
    windowed = parsing.within_time_window(events, T0 + 1, T0 + 3)
    assert_frames_equal(windowed.select("time_ms"), [Row(time_ms=T0 + 1), Row(time_ms=T0 + 2)])
    assert parsing.within_time_window(events, None, None).count() == 4


def test_message_trace_is_ordered_and_follows_receipt_handles(make_events: EventFactory) -> None:
    events = make_events(
        [
            {"time_ms": T0 + 5, "action": "DeleteMessage", "receipt_handle_in_request": "h2"},
            {
                "time_ms": T0 + 5,
                "action": "ReceiveMessage",
                "message_id": "m1",
                "receipt_handle_in_response": "h2",
            },
            {"time_ms": T0, "action": "SendMessage", "message_id": "m1"},
            {"time_ms": T0 + 1, "action": "SendMessage", "message_id": "someone-else"},
        ]
    )
    trace = parsing.message_trace(events, "m1").select("time_ms", "action", "message_id")
    assert_frames_equal(
        trace,
        [
            Row(time_ms=T0, action="SendMessage", message_id="m1"),
            Row(time_ms=T0 + 5, action="ReceiveMessage", message_id="m1"),
            Row(time_ms=T0 + 5, action="DeleteMessage", message_id="m1"),
        ],
        checkRowOrder=True,
    )
