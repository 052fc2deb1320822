"""Delivery's errors (:class:`~gateway.errors.DeliveryError`): a push that cannot be rendered,
signed, sent or answered, and delivery's own configuration that stops a command at start-up.
None is ever a request's answer; the worker records the failed attempt (and retries it, unless
the error is a :class:`~gateway.errors.PermanentDeliveryError`).
"""

from __future__ import annotations

from gateway.errors import DeliveryError


# what a push is made of (pure: gateway.delivery) ---------------------------------------------
class UnrenderableMessageError(DeliveryError, ValueError):
    """The message cannot be expressed in the requested format or in an HTTP header.

    Bodies reach the gateway through XML requests, so this only happens when a store holds data
    that no client could have published; retrying cannot help, the worker should dead-letter it.
    """


class InvalidEndpointError(DeliveryError, ValueError):
    """An endpoint URL that cannot be turned into a request path."""


class EgressError(DeliveryError, ValueError):
    """A CIDR in the egress configuration, or an address to check, is not valid."""


# sending it (gateway.pushing) ----------------------------------------------------------------
class EgressRefusedError(DeliveryError):
    """Every address the endpoint's host resolved to is refused by the egress policy."""


class PushTimeoutError(DeliveryError, TimeoutError):
    """No free connection to the host, or no answer, within the push timeout."""


class ProxyError(DeliveryError):
    """The egress proxy could not be reached, or refused to carry a push (its answer says why)."""


class MalformedResponseError(DeliveryError):
    """The endpoint's answer was not HTTP/1.x, or ended before it was complete."""


# delivery's configuration, checked at start-up -----------------------------------------------
class KeyRingError(DeliveryError):
    """The key directory or a configured PEM file cannot be used."""


class SmtpConfigError(DeliveryError):
    """``MNS_GATEWAY_SMTP_URL`` or ``MNS_GATEWAY_MAIL_FROM`` is unusable; raised at start-up."""


class SmsConfigError(DeliveryError):
    """An SMS provider's settings are unusable; raised at start-up."""
