"""How a claimed delivery reaches its endpoint, one sender per endpoint kind.

Every sender answers with a :class:`PushResult`; a :class:`PermanentDeliveryError` instead means
retrying cannot help (an endpoint kind this gateway cannot reach, a message that cannot be
rendered) and the delivery goes straight to the dead letters.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from gateway.delivery.formats import http_date
from gateway.delivery.notifications import notification_of
from gateway.delivery.notifications import queue_message_body as queue_message_body
from gateway.delivery.records import DeliveryJob
from gateway.delivery.signing import SigningKey, build_signed_push
from gateway.delivery.standard_webhooks import standard_webhook
from gateway.errors import DeliveryError, PermanentDeliveryError
from gateway.observability.tracing import CREATION_HEADER, NO_TRACING, Tracing
from gateway.protocol.request_ids import new_request_id
from gateway.pushing.attempt_spans import creation_traceparent
from gateway.pushing.keyring import KeyRing
from gateway.pushing.transport import PushResult, PushTransport


class Sender(Protocol):
    def send(self, job: DeliveryJob) -> PushResult: ...


class HttpSender:
    """Signed MNS pushes over HTTP(S), as the real service sends them.

    The key ring is re-read every ``key_refresh_seconds`` so that a key rotated by another
    process (``mns-gateway keys rotate``) is used without a restart.
    """

    key_refresh_seconds = 10.0

    def __init__(
        self,
        transport: PushTransport,
        keyring: KeyRing,
        *,
        public_url: str,
        account_id: str,
        timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
        tracing: Tracing = NO_TRACING,
    ) -> None:
        self.transport = transport
        self.tracing = tracing
        self.keyring = keyring
        self.public_url = public_url
        self.account_id = account_id
        self.timeout = timeout
        self.clock = clock
        self._next_refresh = 0.0

    def _signing_key(self) -> SigningKey:
        now = self.clock()
        if now >= self._next_refresh:
            self._next_refresh = now + self.key_refresh_seconds
            return self.keyring.refresh()
        return self.keyring.current

    def send(self, job: DeliveryJob) -> PushResult:
        """The signed push of ``job``; :class:`PermanentDeliveryError` when any of its headers
        (trace context included) or its body cannot be rendered: that message fails, and the
        endpoint is never sent it (nor blamed for it)."""
        unsigned = tuple(self.traced_headers(job).items()) if self.tracing.enabled else ()
        now = self.clock()
        try:
            signed = build_signed_push(
                notification_of(job, self.account_id),
                job.subscription.notify_content_format,
                job.subscription.endpoint,
                key=self._signing_key(),
                public_url=self.public_url,
                date=http_date(now),
                request_id=new_request_id(),
                unsigned=unsigned,
                webhook=standard_webhook(
                    job.standard_webhooks,
                    job.subscription.topic_name,
                    job.subscription.name,
                    job.message.id,
                    now,
                ),
            )
        except (DeliveryError, ValueError) as exc:
            raise PermanentDeliveryError(f"cannot render the push: {exc}") from exc
        return self.transport.send_signed(job.subscription.endpoint, signed, self.timeout)

    def traced_headers(self, job: DeliveryJob) -> dict[str, str]:
        """W3C ``traceparent``/``tracestate`` of this attempt's span (the worker's, current on
        this thread) and the message's creation context (parsed and written anew by
        :func:`~gateway.protocol.properties.trace_context`). None of them ``x-mns-*``: the
        string to sign and every receiver's check stay as they were; checked with the signed
        headers (:func:`gateway.delivery.formats.push_headers`)."""
        headers = self.tracing.current_carrier()
        creation = creation_traceparent(job)  # read once per attempt, when its span started
        if creation:
            headers[CREATION_HEADER] = creation
        return headers


class UnavailableSender:
    """An endpoint kind this deployment cannot reach (SMS; mail without an SMTP server)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def send(self, job: DeliveryJob) -> PushResult:
        raise PermanentDeliveryError(self.reason)


class SenderRegistry:
    """Chooses the sender for a delivery by its route (``http://…``, ``queue:…``, ``mail``…)."""

    def __init__(self, http: Sender, by_kind: dict[str, Sender] | None = None) -> None:
        self.http = http
        self.by_kind = by_kind or {}

    def for_route(self, route: str) -> Sender:
        if route.startswith(("http://", "https://")):
            return self.http
        kind = route.split(":", 1)[0]
        return self.by_kind.get(kind) or UnavailableSender(
            f"this gateway has no {kind} delivery configured"
        )
