"""What each setting's value must be, as a table :mod:`gateway.config.settings` applies to every
variable it reads and to ``serve``'s flags.

A value that parses but makes no sense (``MNS_GATEWAY_DELIVERY_THREADS=-5``, ``--port 99999``,
``--workers 0``) would otherwise be accepted silently, or fail later inside gunicorn or a worker
process as a traceback ending in "Worker failed to boot". Checked here, it is one line naming the
setting before anything is written or started.

Every number has an upper bound as well as a lower one: ``MNS_GATEWAY_LEASE_SECONDS=1e300``
would make every claim fail with ``OverflowError`` (the store keeps times as milliseconds in
signed 64-bit integers), so that nothing is ever pushed. A duration is at most
:data:`LONGEST_SECONDS` unless its own rule says less, a count at most :data:`MOST`: both far
inside the store's integers, even times :data:`LARGEST_SCALE` (``MNS_GATEWAY_RETRY_SCALE``) and
added to now. Names follow the rule of what they name. Pure: no IO, nothing imported beyond the
standard library and the protocol's name rule. Rules that belong to a feature's own parser
(the egress CIDR lists, the SMS provider, the SMTP URL, the signing files, the worker class) are
run by :mod:`gateway.serving.preflight` with those parsers, before gunicorn forks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from gateway.protocol.names import is_valid_name

#: What is wrong with a value, or ``None`` when it is fine.
Check = Callable[[object], str | None]

#: The longest duration any setting may give, in seconds (ten years): in milliseconds, times
#: :data:`LARGEST_SCALE`, and added to now, still about 30,000 times inside a signed 64-bit
#: integer, and inside what a thread or socket can wait (``threading.TIMEOUT_MAX``).
LONGEST_SECONDS = 10 * 365 * 86400
#: The largest ``MNS_GATEWAY_RETRY_SCALE``: it multiplies retry delays and the breaker's times.
LARGEST_SCALE = 100
#: The largest count any setting may give unless its own rule says less.
MOST = 1_000_000_000
HOUR, DAY, WEEK = 3600, 86400, 7 * 86400


def whole(low: int, high: int = MOST, *, what: str = "a whole number") -> Check:
    """An ``int`` from ``low`` up to ``high``."""

    def check(value: object) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            return f"must be {what} from {low} to {high}"
        return None

    return check


def duration(longest: float = LONGEST_SECONDS) -> Check:
    """A finite number of seconds above zero, at most ``longest``."""

    def check(value: object) -> str | None:
        if not isinstance(value, int | float) or not math.isfinite(value):
            return f"must be a number of seconds above 0 and at most {longest:.0f}"
        if not 0 < value <= longest:
            return f"must be a number of seconds above 0 and at most {longest:.0f}"
        return None

    return check


#: Seconds above zero, at most ten years (:data:`LONGEST_SECONDS`): the default rule of a
#: duration.
seconds = duration()


def name_of(kind: str) -> Check:
    """Empty (none), or a name following the rule of MNS queue, topic and subscription names."""

    def check(value: object) -> str | None:
        if not isinstance(value, str) or (value and not is_valid_name(value)):
            return (
                f"must be a {kind} name: 1 to 256 letters, digits and hyphens, "
                "a letter or digit first"
            )
        return None

    return check


_RESOURCE_PART = re.compile(r"[A-Za-z0-9-]{1,64}")


def resource_part(value: object) -> str | None:
    """What an ``acs:mns:{region}:{account}:...`` resource name holds (QueueEndpoints, the
    resource URLs): letters, digits and hyphens (gateway/protocol/endpoints.py)."""
    if not isinstance(value, str) or not _RESOURCE_PART.fullmatch(value):
        return "must be 1 to 64 letters, digits and hyphens"
    return None


def share(value: object) -> str | None:
    """A share of a whole: above 0, at most 1."""
    if not isinstance(value, int | float) or not 0 < value <= 1:
        return "must be a number above 0 and at most 1"
    return None


def factor(value: object) -> str | None:
    if not isinstance(value, int | float) or not math.isfinite(value):
        return f"must be a number above 0 and at most {LARGEST_SCALE}"
    if not 0 < value <= LARGEST_SCALE:
        return f"must be a number above 0 and at most {LARGEST_SCALE}"
    return None


def filled(value: object) -> str | None:
    return None if isinstance(value, str) and value.strip() else "must not be empty"


def optional(check: Check) -> Check:
    """``check`` unless the value is unset (``None``)."""
    return lambda value: None if value is None else check(value)


def web_url(value: object) -> str | None:
    """Empty, or an http(s) URL with a host."""
    if not isinstance(value, str):
        return "must be an http:// or https:// URL"
    if not value:
        return None
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        return "must be an http:// or https:// URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL"
    return None


#: Everything a flag variable may say, and what it means.
FLAGS: Mapping[str, bool] = {
    "": False,
    "0": False,
    "false": False,
    "no": False,
    "off": False,
    "1": True,
    "true": True,
    "yes": True,
    "on": True,
}

PORT = whole(1, 65535, what="a port number")

#: Each setting's rule by field name; a field not listed takes any value its reader gives.
CHECKS: Mapping[str, Check] = {
    "database_pool_size": whole(1, 1000),
    "database_timeout": duration(HOUR),
    "host": filled,
    "port": PORT,
    "account_id": resource_part,
    # A blank MNS_GATEWAY_REGION is unset (any region in a V4 scope), as an env file leaves it.
    "region": lambda value: None if value == "" else resource_part(value),
    "public_url": web_url,
    "retry_scale": factor,
    "max_body_bytes": whole(1, 1 << 30),
    "workers": whole(1, 1024),
    "threads": whole(1, 100_000),
    "worker_class": filled,
    "delivery_threads": whole(0, 100_000),
    "max_pushes_per_route": whole(1, 100_000),
    "lease_seconds": duration(DAY),
    "push_timeout": duration(HOUR),
    "max_waiters": optional(whole(0, 1_000_000)),
    # A long poll lasts 30 s at most (WaitSeconds): a longer re-check would never happen.
    "long_poll_recheck": duration(30),
    "max_queues": whole(1),
    "header_timeout": duration(HOUR),
    "max_connections": whole(1, 1_000_000),
    "graceful_timeout": whole(0, DAY),
    "sms_endpoint": web_url,
    "sms_webhook_url": web_url,
    "breaker_failure_rate": share,
    "breaker_min_attempts": whole(1, 1_000_000),
    "breaker_window": duration(WEEK),
    "breaker_cool_down": duration(WEEK),
    "breaker_max_cool_down": duration(WEEK),
    "breaker_events_topic": name_of("topic"),
    # A minute at least: retention passes run once a minute. At most ten years.
    "history_retention": whole(60, 315_360_000, what="a number of seconds"),
    # An hour at least: operation-log files are written per UTC hour, and only whole hours go.
    "log_retention": optional(whole(3600, what="a number of seconds")),
}


def problem(name: str, value: object) -> str | None:
    """What is wrong with ``value`` for the setting ``name``, or ``None``."""
    check = CHECKS.get(name)
    return None if check is None else check(value)
