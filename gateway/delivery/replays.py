"""Replaying what was delivered (docs/delivery.md#replaying-what-was-delivered): the window of
delivery times an operator asks for, checked against what the gateway keeps, and what a replay
queued or skipped. Pure: the clock and the kept history come in as arguments.

A window is ``[since, until)`` in epoch milliseconds, both ends in the past and ``since`` no
earlier than the delivered history reaches back (``kept_seconds``: the rows of the delivered
history are kept that long after the push succeeded). Anything else is refused with
``InvalidArgument`` and one line saying what is kept, because a window reaching past the history
would silently replay only part of what was asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from gateway.errors.mns import MNSError
from gateway.topics.records import TOPIC_MESSAGE_RETENTION_SECONDS

#: How long the delivered history is kept unless the gateway is told otherwise
#: (``MNS_GATEWAY_HISTORY_RETENTION``'s default): a day, as long as a topic keeps a message.
DEFAULT_HISTORY_SECONDS: Final = TOPIC_MESSAGE_RETENTION_SECONDS
#: What a time looks like, for the error that refuses one.
EXAMPLE_TIME: Final = "2026-12-01T22:21:51Z"
#: The names the command line gives the window's ends; the admin API and the console pass theirs.
CLI_LABELS: Final = ("--since", "--until")
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ReplayWindow:
    """Deliveries that succeeded at ``since_ms`` or later and before ``until_ms``."""

    since_ms: int
    until_ms: int


@dataclass(frozen=True, slots=True)
class ReplayCount:
    """What a replay queued (or, dry, would queue) and what it left out.

    ``pending``: messages still waiting for a delivery to the subscription (they will be pushed
    anyway, so a second push is not queued). ``not_kept``: messages the topic no longer keeps
    (the delivered history keeps when a message was delivered, not its body).
    """

    queued: int = 0
    pending: int = 0
    not_kept: int = 0

    def __add__(self, other: ReplayCount) -> ReplayCount:
        return ReplayCount(
            self.queued + other.queued,
            self.pending + other.pending,
            self.not_kept + other.not_kept,
        )


def iso_utc_ms(ms: int) -> str:
    """``2026-12-01T22:21:51Z`` (milliseconds only when there are any)."""
    moment = datetime.fromtimestamp(ms // 1000, UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}Z" if ms % 1000 else f"{text}Z"


def parse_utc(text: str, label: str) -> int:
    """An ISO 8601 time in UTC (``Z`` or ``+00:00``) as epoch milliseconds; ``InvalidArgument``
    naming ``label`` for anything else, a time without a zone included (whose zone would be a
    guess)."""
    value = text.strip()
    try:
        moment: datetime | None = datetime.fromisoformat(value)
    except ValueError:
        moment = None
    offset = moment.utcoffset() if moment is not None else None
    if moment is None or offset is None or offset.total_seconds() != 0:
        raise MNSError(
            "InvalidArgument",
            f"{label} {text!r} is not an ISO 8601 time in UTC, such as {EXAMPLE_TIME}",
        )
    return (moment - _EPOCH) // timedelta(milliseconds=1)  # exact, where floats round


def earliest_kept_ms(now_ms: int, kept_seconds: int) -> int:
    """The earliest ``since`` a window may start at, rounded up to a whole second (so that the
    time an error names is itself accepted)."""
    earliest = now_ms - kept_seconds * 1000
    return -(-earliest // 1000) * 1000


def replay_window(
    since: str,
    until: str | None,
    now_ms: int,
    kept_seconds: int = DEFAULT_HISTORY_SECONDS,
    labels: tuple[str, str] = CLI_LABELS,
) -> ReplayWindow:
    """The window ``since``/``until`` name (``until`` defaults to now), or ``InvalidArgument``
    saying what is wrong with it and, for one reaching past the history, what is kept."""
    since_label, until_label = labels
    since_ms = parse_utc(since, since_label)
    until_ms = now_ms if until is None or not until.strip() else parse_utc(until, until_label)
    for label, ms in ((since_label, since_ms), (until_label, until_ms)):
        if ms > now_ms:
            raise MNSError(
                "InvalidArgument",
                f"{label} {iso_utc_ms(ms)} is in the future (it is {iso_utc_ms(now_ms)}): "
                "only what was delivered can be replayed",
            )
    if until_ms <= since_ms:
        raise MNSError("InvalidArgument", f"{until_label} must be after {since_label}")
    earliest = earliest_kept_ms(now_ms, kept_seconds)
    if since_ms < earliest:
        raise MNSError(
            "InvalidArgument",
            f"the gateway keeps delivered history for {kept_seconds} s: {since_label} must be"
            f" at or after {iso_utc_ms(earliest)}",
        )
    return ReplayWindow(since_ms, until_ms)
