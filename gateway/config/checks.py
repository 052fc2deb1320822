"""What each setting's value must be, as a table :mod:`gateway.config.settings` applies to every
variable it reads and to ``serve``'s flags.

A value that parses but makes no sense (``MNS_GATEWAY_DELIVERY_THREADS=-5``, ``--port 99999``,
``--workers 0``) used to be accepted silently, or failed later inside gunicorn or a worker
process as a traceback ending in "Worker failed to boot". Checked here, it is one line naming the
setting before anything is written or started. Pure: no IO, nothing imported beyond the
standard library. Rules that belong to a feature's own parser (the egress CIDR lists, the SMS
provider, the SMTP URL, the signing files, the worker class) are run by
:mod:`gateway.serving.preflight` with those parsers, before gunicorn forks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

#: What is wrong with a value, or ``None`` when it is fine.
Check = Callable[[object], str | None]


def whole(low: int, high: int | None = None, *, what: str = "a whole number") -> Check:
    """An ``int`` from ``low`` up to ``high`` (no upper bound when ``None``)."""
    expected = f"{what} from {low} to {high}" if high is not None else f"{what}, {low} or more"

    def check(value: object) -> str | None:
        if not isinstance(value, int) or value < low or (high is not None and value > high):
            return f"must be {expected}"
        return None

    return check


def seconds(value: object) -> str | None:
    """A finite number of seconds above zero."""
    if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        return "must be a number of seconds above 0"
    return None


def share(value: object) -> str | None:
    """A share of a whole: above 0, at most 1."""
    if not isinstance(value, int | float) or not 0 < value <= 1:
        return "must be a number above 0 and at most 1"
    return None


def factor(value: object) -> str | None:
    if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        return "must be a number above 0"
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
    "database_pool_size": whole(1),
    "database_timeout": seconds,
    "host": filled,
    "port": PORT,
    "account_id": filled,
    # A blank MNS_GATEWAY_REGION is unset (any region in a V4 scope), as an env file leaves it.
    "public_url": web_url,
    "retry_scale": factor,
    "max_body_bytes": whole(1),
    "workers": whole(1),
    "threads": whole(1),
    "worker_class": filled,
    "delivery_threads": whole(0),
    "max_pushes_per_route": whole(1),
    "lease_seconds": seconds,
    "push_timeout": seconds,
    "max_waiters": optional(whole(0)),
    "max_queues": whole(1),
    "header_timeout": seconds,
    "max_connections": whole(1),
    "graceful_timeout": whole(0),
    "sms_endpoint": web_url,
    "sms_webhook_url": web_url,
    "breaker_failure_rate": share,
    "breaker_min_attempts": whole(1),
    "breaker_window": seconds,
    "breaker_cool_down": seconds,
    "breaker_max_cool_down": seconds,
    # A minute at least: retention passes run once a minute. At most ten years.
    "history_retention": whole(60, 315_360_000, what="a number of seconds"),
    # An hour at least: operation-log files are written per UTC hour, and only whole hours go.
    "log_retention": optional(whole(3600, what="a number of seconds")),
}


def problem(name: str, value: object) -> str | None:
    """What is wrong with ``value`` for the setting ``name``, or ``None``."""
    check = CHECKS.get(name)
    return None if check is None else check(value)
