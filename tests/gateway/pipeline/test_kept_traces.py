"""``--trace`` from the facts a report keeps: the pure part (rows to lines), without Spark."""

from __future__ import annotations

from gateway.pipeline.kept_traces import format_summary, merge, summary_lines

T0 = 1_704_067_200_000


def fact(**fields: object) -> dict[str, object]:
    return {
        "topic_name": None,
        "subscription_name": None,
        "endpoint": None,
        "queue_name": None,
        **fields,
    }


def test_a_message_split_over_two_partitions_is_told_once() -> None:
    """A delivery retried across an hour boundary: counts add up, first and last times hold."""
    rows = [
        fact(topic_name="t", publishes=1, published_ms=T0),
        fact(
            topic_name="t", subscription_name="s", endpoint="http://e", attempts=2,
            failed_attempts=2, first_attempt_key=(T0 + 10) * 2 + 1, last_attempt_ms=T0 + 20,
            last_status_code=502,
        ),
        fact(
            topic_name="t", subscription_name="s", endpoint="http://e", attempts=1,
            failed_attempts=1, first_attempt_key=(T0 + 3_600_000) * 2 + 1,
            last_attempt_ms=T0 + 3_600_000, last_status_code=503, dead_letter_ms=T0 + 3_600_001,
            replays=1,
        ),
    ]  # fmt: skip
    assert len(merge(rows)) == 2
    lines = format_summary(summary_lines(rows))
    assert [line.split()[2] for line in lines] == ["PublishMessage", "PushMessage", "DeadLetter"]
    assert lines[0].startswith("2024-01-01 00:00:00.000Z")
    assert "attempts=3 failed=3 last_status_code=503" in lines[1] and "replays=1" in lines[1]
    assert lines[1].startswith("2024-01-01 00:00:00.010Z")
    # issue 36 item 11: the last attempt's time for people (was last_attempt_ms=1704070800000)
    assert "last_attempt=2024-01-01T01:00:00.000Z" in lines[1] and "_ms=" not in lines[1]


def test_a_queue_message_sent_received_twice_and_deleted() -> None:
    rows = [
        fact(queue_name="q", sends=1, sent_ms=T0, receives=1, max_dequeue_count=1, first_ms=T0),
        fact(queue_name="q", receives=1, max_dequeue_count=2, deletes=1, deleted_ms=T0 + 9),
    ]
    lines = format_summary(summary_lines(rows))
    assert [line.split()[2] for line in lines] == ["SendMessage", "ReceiveMessage", "DeleteMessage"]
    assert "receives=2 dequeue_count=2" in lines[1]


def test_a_push_never_answered_says_so() -> None:
    """Issue 47: ``last_status_code=None`` for a push that got no answer (a timeout)."""
    rows = [
        fact(
            topic_name="t", subscription_name="s", endpoint="http://e", attempts=1,
            failed_attempts=1, first_attempt_key=T0 * 2 + 1, last_attempt_ms=T0,
            last_status_code=None,
        ),
    ]  # fmt: skip
    (line,) = format_summary(summary_lines(rows))
    assert "last_status_code=(no answer)" in line and "None" not in line


def test_no_facts_no_lines() -> None:
    assert summary_lines([]) == []
