"""The pure rules: states from times, delays, ordering, MD5, ids, attribute ranges."""

from __future__ import annotations

import pytest

from gateway.errors.mns import MNSError
from gateway.queues.message_ids import MessageIdFactory
from gateway.queues.records import DELAY_SECONDS, MAXIMUM_MESSAGE_SIZE
from gateway.queues.states import (
    MessageState,
    body_md5,
    body_size,
    effective_delay,
    message_state,
    receive_order_key,
)

NOW = 1_000_000


@pytest.mark.parametrize(
    ("visible_at", "expires_at", "dequeue_count", "state"),
    [
        (NOW, NOW + 1, 0, MessageState.ACTIVE),
        (NOW - 5, NOW + 1, 3, MessageState.ACTIVE),
        (NOW + 1, NOW + 9, 0, MessageState.DELAYED),
        (NOW + 1, NOW + 9, 1, MessageState.INACTIVE),
        (NOW - 5, NOW, 0, MessageState.EXPIRED),
        (NOW + 1, NOW, 2, MessageState.EXPIRED),
    ],
)
def test_state_follows_from_times(
    visible_at: int, expires_at: int, dequeue_count: int, state: MessageState
) -> None:
    found = message_state(
        visible_at=visible_at, expires_at=expires_at, dequeue_count=dequeue_count, now_ms=NOW
    )
    assert found is state


def test_message_delay_wins_even_when_zero() -> None:
    assert effective_delay(None, 30) == 30
    assert effective_delay(0, 30) == 0
    assert effective_delay(5, 0) == 5


def test_order_is_priority_then_activation_then_id() -> None:
    keys = [
        receive_order_key(8, 100, "B"),
        receive_order_key(1, 900, "Z"),
        receive_order_key(8, 100, "A"),
        receive_order_key(8, 50, "C"),
    ]
    assert sorted(keys) == [(1, 900, "Z"), (8, 50, "C"), (8, 100, "A"), (8, 100, "B")]


def test_md5_is_uppercase_hex_of_the_body_as_sent() -> None:
    assert body_md5("aGVsbG8=") == "0733351879B2FA9BD05C7CA3061529C0"  # not MD5("hello")
    assert body_size("中") == 3


def test_message_ids_sort_by_send_time_and_are_unique() -> None:
    factory = MessageIdFactory()
    ids = [factory.new_id(1_700_000_000_000 + i // 3) for i in range(30)]
    assert ids == sorted(ids)
    assert len(set(ids)) == 30
    assert MessageIdFactory().new_id(1) != factory.new_id(1)  # another process token


def test_attribute_ranges_use_the_services_wording() -> None:
    assert DELAY_SECONDS.parse(None, None) is None
    assert DELAY_SECONDS.parse(" 7 ", 0) == 7
    for bad in ("-1", "604801", "x", ""):
        with pytest.raises(MNSError) as caught:
            DELAY_SECONDS.parse(bad, 0)
        assert caught.value.code == "InvalidArgument"
        assert caught.value.message == (
            "The value of DelaySeconds should between 0 and 604800 seconds."
        )
    with pytest.raises(MNSError) as caught:
        MAXIMUM_MESSAGE_SIZE.parse("100", None)
    assert caught.value.message.endswith("between 1024 and 65536 bytes.")
