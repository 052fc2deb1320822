"""ListSubscriptionByTopic's ``EndpointType`` and ``EndpointValue`` filters, as shapes of the
stored endpoint (docs/control-plane.md#listsubscriptionbytopic-filters). Pure.

``EndpointType`` names the kind of endpoint by Subscribe's ``PushType`` names; a subscription's
kind is read from its endpoint's form (:mod:`gateway.protocol.endpoints`). ``EndpointValue`` is
compared whole, not as a prefix: the endpoint as GetSubscriptionAttributes returns it, or its
value part (a queue's name, a mail address, a phone number).
"""

from __future__ import annotations

from typing import Final

from gateway.api.control.params import Params
from gateway.errors.control import invalid
from gateway.protocol.endpoints import MAIL_PREFIX, QUEUE_PATH, QUEUE_PREFIX, SMS_PREFIX
from gateway.store import EndpointFilter, EndpointShape

#: EndpointType -> the endpoints of that kind (``http`` covers HTTPS too, as PushType does).
KINDS: Final[dict[str, tuple[EndpointShape, ...]]] = {
    "http": (EndpointShape("http://"), EndpointShape("https://")),
    "queue": (EndpointShape(QUEUE_PREFIX),),
    "email": (EndpointShape(MAIL_PREFIX),),
    "alisms": (EndpointShape(SMS_PREFIX),),
}
#: The service's other push types: no subscription here can have one, so they match none.
ELSEWHERE: Final = ("dm", "dysms", "fc", "eventbus", "mpush", "kafka")


def endpoint_filter(params: Params) -> EndpointFilter | None:
    """The filter the call asks for; ``None`` when it asks for none."""
    kind = params.optional("EndpointType")
    value = params.optional("EndpointValue")
    if kind is None and value is None:
        return None
    return EndpointFilter(
        kinds=None if kind is None else _kind(kind),
        values=None if value is None else value_shapes(value.strip()),
    )


def _kind(kind: str) -> tuple[EndpointShape, ...]:
    lowered = kind.lower()
    if lowered in ELSEWHERE:
        return ()
    if lowered not in KINDS:
        raise invalid("EndpointType", f"one of {', '.join([*KINDS, *ELSEWHERE])}.")
    return KINDS[lowered]


def value_shapes(value: str) -> tuple[EndpointShape, ...]:
    """The endpoints ``value`` names: itself whole, or the queue, address or number in one."""
    return (
        EndpointShape(value, exact=True),
        EndpointShape(QUEUE_PREFIX, f"{QUEUE_PATH}{value}"),
        EndpointShape(f"{MAIL_PREFIX}{value}", exact=True),
        EndpointShape(f"{SMS_PREFIX}{value}", exact=True),
    )
