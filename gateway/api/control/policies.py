"""The JSON policies of the control plane's parameters: pure, no IO.

``DlqPolicy`` is checked by :mod:`gateway.queues.dlq_policy`, as the XML API's ``<DlqPolicy>``
is; ``TenantRateLimitPolicy`` is ``{Enabled, MaxReceivesPerSecond}``
(docs/control-plane.md#tenantratelimitpolicy).
"""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control.params import Params
from gateway.errors.control import invalid
from gateway.protocol.integers import integer_in_range
from gateway.queues import dlq_policy as dead_letters
from gateway.queues.dlq_policy import PolicyUpdate
from gateway.store import RateLimitPolicy

RATE_LIMIT: Final = "TenantRateLimitPolicy"
#: MaxReceivesPerSecond: the documents give no range; ours.
MAX_RATE: Final = 100_000


def dead_letter_update(params: Params) -> PolicyUpdate | None:
    """``None`` when absent or ``{}``: the Terraform provider sends ``{}`` for a resource
    without a ``dlq_policy`` block."""
    fields = params.json_object(dead_letters.ELEMENT)
    return dead_letters.parse_policy_json(fields) if fields else None


def rate_limit(params: Params) -> RateLimitPolicy | None:
    fields = params.json_object(RATE_LIMIT)
    if not fields:
        return None
    enabled = _enabled(fields.get("Enabled"))
    raw = fields.get("MaxReceivesPerSecond")
    rate = None
    if raw is not None and raw != "":
        rate = None if isinstance(raw, bool) else integer_in_range(str(raw), 1, MAX_RATE)
        if rate is None:
            raise invalid(RATE_LIMIT, f"MaxReceivesPerSecond should be between 1 and {MAX_RATE}.")
    if enabled and rate is None:
        raise invalid(RATE_LIMIT, "an enabled policy needs MaxReceivesPerSecond.")
    return RateLimitPolicy(enabled, rate)


def _enabled(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise invalid(RATE_LIMIT, "Enabled should be true or false.")
