"""A subscription's two delivery settings, as the protocol spells them: NotifyStrategy and
NotifyContentFormat.

Parsed once, when a Subscribe or SetSubscriptionAttributes request arrives, and kept as these
enums on :class:`~gateway.topics.records.Subscription` from then on (in the store too, by value),
so the delivery worker never parses them again per attempt.
"""

from __future__ import annotations

from enum import StrEnum

from gateway.errors.mns import MNSError


class NotifyStrategy(StrEnum):
    """How a failed push is retried: see :mod:`gateway.delivery.retry` for the schedules."""

    BACKOFF_RETRY = "BACKOFF_RETRY"
    EXPONENTIAL_DECAY_RETRY = "EXPONENTIAL_DECAY_RETRY"

    @classmethod
    def parse(cls, text: str) -> NotifyStrategy:
        """Accept any case: the API reference's own table spells it ``EXponential_Decay_Retry``.

        An unknown value is the client's error: 400 ``InvalidArgument``.
        """
        try:
            return cls(text.strip().upper())
        except ValueError:
            raise MNSError("InvalidArgument", f"Unknown NotifyStrategy {text!r}.") from None


class ContentFormat(StrEnum):
    """NotifyContentFormat: the body of a push (see :func:`gateway.delivery.formats.render`)."""

    XML = "XML"
    JSON = "JSON"
    SIMPLIFIED = "SIMPLIFIED"

    @classmethod
    def parse(cls, text: str) -> ContentFormat:
        try:
            return cls(text.strip().upper())
        except ValueError:
            raise MNSError("InvalidArgument", f"Unknown NotifyContentFormat {text!r}.") from None
