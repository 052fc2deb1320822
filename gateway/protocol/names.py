"""Validation of resource names and attribute values, with the error codes clients expect."""

from __future__ import annotations

import re
from typing import Final

from gateway.errors.mns import MNSError, invalid_argument
from gateway.protocol.integers import integer_in_range

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
MAX_NAME_LENGTH: Final = 256

#: resource kind -> (length error code, invalid name error code)
_NAME_ERRORS: Final = {
    "queue": ("QueueNameLengthError", "InvalidQueueName"),
    "topic": ("TopicNameLengthError", "TopicNameInvalid"),
    "subscription": ("SubscriptionNameLengthError", "SubscriptionNameInvalid"),
}


def validate_name(kind: str, name: str) -> str:
    """Names are 1-256 chars, a letter or digit first, then letters, digits and ``-``."""
    length_error, invalid_error = _NAME_ERRORS[kind]
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        raise MNSError(length_error)
    if not _NAME.fullmatch(name):
        raise MNSError(invalid_error)
    return name


def is_valid_name(name: str) -> bool:
    """Whether ``name`` follows the rule of queue, topic and subscription names
    (:func:`validate_name`), for a setting naming one (``MNS_GATEWAY_BREAKER_EVENTS_TOPIC``)."""
    return 1 <= len(name) <= MAX_NAME_LENGTH and _NAME.fullmatch(name) is not None


def int_attribute(
    value: str | None, element: str, low: int, high: int, default: int | None
) -> int | None:
    """An integer attribute within ``[low, high]``; ``default`` when the element is absent."""
    if value is None:
        return default
    number = integer_in_range(value, low, high)
    if number is None:
        raise invalid_argument(element, low, high)
    return number


def bool_attribute(value: str | None, element: str, default: bool | None) -> bool | None:
    """``True``/``False`` in any case, as the SDKs send them."""
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise MNSError("InvalidArgument", f"The value of {element} should be True or False.")
    return lowered == "true"


def render_bool(value: bool) -> str:
    return "True" if value else "False"
