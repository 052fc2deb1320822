"""Delivery ids: unique, and growing with time so that the deliveries' primary key takes
inserts on its last pages (gateway/delivery/delivery_ids.py)."""

from __future__ import annotations

import re

from gateway.delivery.delivery_ids import new_delivery_id

DELIVERY_ID = re.compile(r"[0-9a-f]{32}")


def test_ids_are_32_lowercase_hex_characters_like_the_random_ones_before() -> None:
    assert DELIVERY_ID.fullmatch(new_delivery_id(1_700_000_000_000))
    assert DELIVERY_ID.fullmatch(new_delivery_id(0))


def test_ids_do_not_repeat_within_a_millisecond() -> None:
    ids = [new_delivery_id(1_700_000_000_000) for _ in range(10_000)]
    assert len(set(ids)) == len(ids)


def test_ids_sort_by_time_then_by_creation() -> None:
    ids = [new_delivery_id(ms) for ms in (1_700_000_000_000, 1_700_000_000_000, 1_700_000_000_001)]
    ids.append(new_delivery_id(1_800_000_000_000))
    assert ids == sorted(ids)
