"""The retention pass's pure rules (issue 50; docs/deploy.md#retention): how wide a range is, how
often the pass runs, which ranges a pass makes ahead and which it may drop, and when a pass is
due. The statements they plan are tested on the backends in test_retention.py."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.store.retention import Passes
from gateway.store.sql.partitions_sql import (
    MAX_PASS_MS,
    MIN_PASS_MS,
    Partition,
    ahead_ms,
    parse_bound,
    pass_interval_ms,
    ranges_to_drop,
    ranges_to_make,
    width_ms,
)

MINUTE_MS = 60_000
DAY_S = 86_400
NOW_MS = 1_800_000_007_000


@pytest.mark.parametrize(
    ("retention_s", "width", "every"),
    [
        # The shortest retention the setting allows: its swing was a whole retention's worth.
        (60, 15_000, 7_500),
        (600, 150_000, MAX_PASS_MS),
        # The default: ranges of hours, and the pass once a minute as before.
        (DAY_S, 6 * 3_600_000, MAX_PASS_MS),
        # Under the setting's minimum: floors, not a pass as constant work.
        (1, 10_000, MIN_PASS_MS),
    ],
)
def test_a_range_is_a_quarter_of_the_retention_and_the_pass_half_a_range(
    retention_s: int, width: int, every: int
) -> None:
    assert width_ms(retention_s) == width
    assert pass_interval_ms(retention_s) == every


@given(st.integers(min_value=60, max_value=315_360_000))
def test_the_history_kept_swings_by_a_fraction_of_the_retention(retention_s: int) -> None:
    """Kept between the retention and the retention plus a range and a pass: at most 3/8 more,
    so a drop takes away at most ~27 % of the most kept (it took up to two thirds at 60 s)."""
    retention_ms = retention_s * 1000
    most = retention_ms + width_ms(retention_s) + pass_interval_ms(retention_s)
    assert most <= retention_ms * 11 // 8
    assert MIN_PASS_MS <= pass_interval_ms(retention_s) <= MAX_PASS_MS
    assert ahead_ms(retention_s) >= 10 * pass_interval_ms(retention_s)


def ranges(*bounds: tuple[int, int]) -> list[Partition]:
    return [Partition(f"t_p{low}", low, high) for low, high in bounds]


def test_ranges_are_made_from_the_current_one_to_ahead_each_on_the_width() -> None:
    made = ranges_to_make([], NOW_MS, 60)
    assert made[0][0] == NOW_MS // 15_000 * 15_000 <= NOW_MS
    assert all(high - low == 15_000 and low % 15_000 == 0 for low, high in made)
    assert all(a[1] == b[0] for a, b in pairwise(made))
    assert made[-1][1] >= NOW_MS + ahead_ms(60) > made[-1][0]
    # Ten passes ahead, not ten minutes (forty ranges of 15 s) as with one-minute ranges.
    assert len(made) <= 7


def test_ranges_continue_where_the_newest_ends() -> None:
    existing = [Partition("t_legacy", None, 5), *ranges((NOW_MS - 15_000, NOW_MS + 15_000))]
    made = ranges_to_make(existing, NOW_MS, 60)
    assert made[0][0] == NOW_MS + 15_000
    assert ranges_to_make([*existing, *ranges(*made)], NOW_MS, 60) == []


def test_ranges_made_under_an_older_width_are_continued_on_the_new_one() -> None:
    """A gateway upgraded from one-minute ranges at a 60-s retention goes on from the newest."""
    top = (NOW_MS // MINUTE_MS + 1) * MINUTE_MS
    made = ranges_to_make(ranges((top - MINUTE_MS, top)), top - 30_000, 60)
    assert made == [(top, top + 15_000), (top + 15_000, top + 30_000), (top + 30_000, top + 45_000)]


def test_ranges_are_made_in_batches_once_they_reach_less_than_half_the_ahead() -> None:
    """Each batch locks the table once (CREATE TABLE … PARTITION OF takes ACCESS EXCLUSIVE)."""
    made = ranges_to_make([], NOW_MS, 60)
    assert ranges_to_make(ranges(*made), NOW_MS + 7_500, 60) == []  # the next pass: nothing
    reach = made[-1][1]
    later = reach - ahead_ms(60) // 2 + 1  # the ranges reach just under half the ahead
    again = ranges_to_make(ranges(*made), later, 60)
    assert again[0][0] == reach and again[-1][1] >= later + ahead_ms(60)
    assert len(again) >= 3


def test_a_range_starts_past_what_the_default_holds_and_never_in_the_past() -> None:
    made = ranges_to_make([], NOW_MS, 60, floor_ms=NOW_MS + 20_001)
    assert made[0] == (NOW_MS + 20_001, (NOW_MS + 20_001) // 15_000 * 15_000 + 15_000)
    week_old = ranges((NOW_MS - 7 * DAY_S * 1000, NOW_MS - 7 * DAY_S * 1000 + 15_000))
    assert ranges_to_make(week_old, NOW_MS, 60)[0][0] == NOW_MS // 15_000 * 15_000


def test_a_range_is_droppable_once_all_of_it_is_before_the_cutoff() -> None:
    cutoff = NOW_MS - 60_000
    legacy, default = (
        Partition("t_legacy", None, cutoff - 30_000),
        Partition("t_default", None, None),
    )
    old, straddling = ranges((cutoff - 15_000, cutoff), (cutoff - 5_000, cutoff + 10_000))
    assert ranges_to_drop([legacy, old, straddling, default], cutoff) == [legacy, old]


def test_bounds_are_read_back_from_the_catalogue() -> None:
    bound = "FOR VALUES FROM ('18316E0B6A8') TO ('18316E0F1F0')"
    assert parse_bound("t_p1", bound) == Partition("t_p1", 0x18316E0B6A8, 0x18316E0F1F0)
    legacy = parse_bound("t_legacy", "FOR VALUES FROM (MINVALUE) TO ('18316E0B6A8')")
    assert legacy == Partition("t_legacy", None, 0x18316E0B6A8)
    assert parse_bound("t_default", "DEFAULT") == Partition("t_default", None, None)


def test_a_pass_is_due_an_interval_after_the_last_and_when_the_clock_went_back() -> None:
    passes = Passes(7_500)
    assert passes.take(NOW_MS)
    assert not passes.take(NOW_MS + 7_499)
    assert passes.take(NOW_MS + 7_500)
    assert not passes.due(NOW_MS + 7_501)
    assert passes.take(NOW_MS - 3_600_000)  # the clock set back an hour: not an hour without
    passes.ran(NOW_MS)  # the expiry's pass counts too
    assert not passes.due(NOW_MS + 1)
