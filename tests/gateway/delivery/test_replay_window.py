"""The replay's window (gateway/delivery/replays.py): what parses, what is refused and what the
refusal says, with the clock and the kept history as arguments."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.delivery.replays import (
    DEFAULT_HISTORY_SECONDS,
    ReplayWindow,
    earliest_kept_ms,
    iso_utc_ms,
    parse_utc,
    replay_window,
)
from gateway.errors.mns import MNSError

#: 2026-12-02T00:00:00Z
NOW_MS = 1_796_169_600_000


def refusal(since: str, until: str | None = None, **options: object) -> str:
    with pytest.raises(MNSError) as refused:
        replay_window(since, until, NOW_MS, **options)  # type: ignore[arg-type]
    assert refused.value.code == "InvalidArgument"
    assert "\n" not in refused.value.message
    return refused.value.message


def test_the_example_time_parses() -> None:
    assert iso_utc_ms(NOW_MS) == "2026-12-02T00:00:00Z"
    assert parse_utc("2026-12-01T22:21:51Z", "--since") == NOW_MS - (98 * 60 + 9) * 1000
    assert parse_utc("2026-12-01T22:21:51+00:00", "--since") == parse_utc(
        "2026-12-01T22:21:51Z", "--since"
    )
    assert parse_utc(" 2026-12-01T22:21:51.250Z ", "--since") % 1000 == 250


@given(st.integers(min_value=0, max_value=4_000_000_000_000))
def test_a_time_printed_parses_back(ms: int) -> None:
    assert parse_utc(iso_utc_ms(ms), "--since") == ms


@pytest.mark.parametrize(
    "text",
    [
        "yesterday",
        "",
        "2026-12-01",
        "2026-12-01T22:21:51",
        "2026-12-01T22:21:51+08:00",
        "1764627711",
    ],
)
def test_what_is_not_an_iso_time_in_utc(text: str) -> None:
    """A date alone has no time; a time without a zone or in another zone would be a guess."""
    message = refusal(text)
    assert message.startswith(f"--since {text!r} is not an ISO 8601 time in UTC")
    assert "2026-12-01T22:21:51Z" in message


def test_until_defaults_to_now() -> None:
    window = replay_window("2026-12-01T22:00:00Z", None, NOW_MS)
    assert window == ReplayWindow(NOW_MS - 2 * 3600 * 1000, NOW_MS)
    assert replay_window("2026-12-01T22:00:00Z", "", NOW_MS).until_ms == NOW_MS


def test_a_window_in_the_future() -> None:
    assert refusal("2026-12-02T00:00:01Z") == (
        "--since 2026-12-02T00:00:01Z is in the future (it is 2026-12-02T00:00:00Z): "
        "only what was delivered can be replayed"
    )
    assert refusal("2026-12-01T23:00:00Z", "2026-12-02T01:00:00Z").startswith(
        "--until 2026-12-02T01:00:00Z is in the future"
    )


@pytest.mark.parametrize("until", ["2026-12-01T21:00:00Z", "2026-12-01T22:00:00Z"])
def test_until_not_after_since(until: str) -> None:
    assert refusal("2026-12-01T22:00:00Z", until) == "--until must be after --since"


def test_more_than_the_history_keeps() -> None:
    assert refusal("2026-11-30T23:59:59Z") == (
        "the gateway keeps delivered history for 86400 s: --since must be at or after "
        "2026-12-01T00:00:00Z"
    )
    # The time it names is accepted.
    assert replay_window("2026-12-01T00:00:00Z", None, NOW_MS).since_ms == NOW_MS - 86_400_000


def test_the_kept_history_is_a_parameter() -> None:
    """As long as the gateway keeps it: the admin API, the CLI and the console pass it in."""
    assert DEFAULT_HISTORY_SECONDS == 86_400
    assert refusal("2026-12-01T22:00:00Z", kept_seconds=3600) == (
        "the gateway keeps delivered history for 3600 s: --since must be at or after "
        "2026-12-01T23:00:00Z"
    )
    week = replay_window("2026-11-26T00:00:00Z", None, NOW_MS, kept_seconds=7 * 86_400)
    assert week.since_ms == NOW_MS - 6 * 86_400_000


def test_the_earliest_time_is_rounded_up_to_a_second() -> None:
    assert earliest_kept_ms(NOW_MS + 1, 60) == NOW_MS - 59_000
    assert earliest_kept_ms(NOW_MS, 60) == NOW_MS - 60_000


def test_the_admin_apis_names() -> None:
    message = refusal("soon", labels=("since", "until"))
    assert message.startswith("since 'soon' is not")
