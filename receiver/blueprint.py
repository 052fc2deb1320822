"""The Flask shell: read the request, verify it, parse it, hand it to one handler, answer.

Answers follow the MNS documentation, because the sender retries on anything but 2xx:

* ``204`` the handler accepted the notification (or dedupe saw it already);
* ``403`` verification failed, no handler ran (:class:`~receiver.exceptions.VerificationError`);
* ``400`` genuine but unparseable (:class:`~receiver.exceptions.MalformedNotificationError`);
* ``500`` no handler matched, or the handler raised: the sender retries later.

Routing rule: among the handlers whose filters all match, the one naming the most filters runs;
between equally many, ``subscription`` beats ``topic`` beats ``tag``. Exactly one handler runs per
notification, so a failed handler and the retry it causes never re-run a handler that had
already succeeded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any, TypeVar
from urllib.parse import quote, urlsplit

from flask import Blueprint, Flask, Response, request

from receiver.certs import (
    OFFICIAL_CERT_URL_PREFIXES,
    CertificateCache,
    CertificateFetcher,
    CertificateURLPolicy,
    RequestsCertificateFetcher,
)
from receiver.dedupe import DedupeStore, InMemoryDedupeStore, dedupe_key
from receiver.exceptions import BodyTooLargeError, MalformedNotificationError, VerificationError
from receiver.notification import Notification, parse_notification
from receiver.standard_webhooks import secret_keys, verify_standard_webhook
from receiver.verify import SignedPush, lowercase_headers, verify_push

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "Handler",
    "HandlerRoute",
    "MNSReceiver",
    "read_body_at_most",
    "request_uri_as_sent",
    "select_route",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""A message is at most 64 KiB, but XML or JSON escaping can grow it several times over."""

Handler = Callable[[Notification], object]
HandlerT = TypeVar("HandlerT", bound=Handler)

# RFC 3986 pchar minus "%": what a path may hold unescaped, so re-quoting leaves it alone.
_PATH_SAFE = "/!$&'()*+,;=:@-._~"


@dataclass(frozen=True, slots=True)
class HandlerRoute:
    """A handler and its filters; ``None`` means "any"."""

    handler: Handler
    topic: str | None = None
    tag: str | None = None
    subscription: str | None = None

    def matches(self, notification: Notification) -> bool:
        return (
            (self.topic is None or self.topic == notification.topic_name)
            and (self.tag is None or self.tag == notification.message_tag)
            and (self.subscription is None or self.subscription == notification.subscription_name)
        )

    @property
    def filters(self) -> tuple[str | None, str | None, str | None]:
        return (self.subscription, self.topic, self.tag)

    @property
    def specificity(self) -> tuple[int, bool, bool, bool]:
        """Sort key of the routing rule: filter count, then subscription, topic, tag."""
        named = tuple(value is not None for value in self.filters)
        return (sum(named), *named)


def select_route(routes: Iterable[HandlerRoute], notification: Notification) -> HandlerRoute | None:
    """The most specific matching route, or ``None``.

    Never ambiguous: two matching routes of equal specificity name the same filters with the
    same values, which :meth:`MNSReceiver.handler` refuses to register.
    """
    matching = [route for route in routes if route.matches(notification)]
    return max(matching, key=lambda route: route.specificity, default=None)


def request_uri_as_sent(environ: Mapping[str, Any]) -> str:
    """The path and query the sender signed, still percent-encoded as it sent them.

    Prefers the server's raw request target (``RAW_URI`` from gunicorn and werkzeug,
    ``REQUEST_URI`` from uWSGI and mod_wsgi). When a proxy stripped a path prefix and
    middleware such as ``werkzeug.middleware.proxy_fix.ProxyFix(x_prefix=1)`` put it back in
    ``SCRIPT_NAME``, the raw target lacks it, so it is restored: the sender signed the URI it
    sent to the proxy. Without a raw target, the URI is rebuilt from ``SCRIPT_NAME`` and
    ``PATH_INFO``; that re-encoding is exact for every path a sender would not escape itself.
    """
    script_name = quote(_wsgi_text(environ.get("SCRIPT_NAME", "")), safe=_PATH_SAFE)
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if not raw:
        path = script_name + quote(_wsgi_text(environ.get("PATH_INFO", "")), safe=_PATH_SAFE)
        query = environ.get("QUERY_STRING", "")
        return f"{path}?{query}" if query else path
    uri = _wsgi_text(raw)
    if not uri.startswith("/"):  # absolute form, "POST http://host/path HTTP/1.1"
        target = urlsplit(uri)
        uri = (target.path or "/") + (f"?{target.query}" if target.query else "")
    path = uri.partition("?")[0]
    if script_name and path != script_name and not path.startswith(script_name + "/"):
        uri = script_name + uri
    return uri


def _wsgi_text(value: str) -> str:
    """WSGI strings are bytes decoded as latin-1 (PEP 3333); recover what the sender wrote."""
    return value.encode("latin-1").decode("utf-8", "replace")


def read_body_at_most(stream: IO[bytes], declared_length: int | None, max_bytes: int) -> bytes:
    """Read the body, refusing before reading when the declared length is already too large.

    Chunked bodies declare no length, so the read itself stops one byte past the limit.
    """
    if declared_length is not None and declared_length > max_bytes:
        raise BodyTooLargeError(f"Content-Length {declared_length} exceeds {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    while chunk := stream.read(min(65536, max_bytes + 1 - size)):  # bounded by max_bytes + 1
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLargeError(f"body exceeds {max_bytes} bytes")
    return b"".join(chunks)


class MNSReceiver:
    """Verifies MNS HTTP pushes and dispatches them to handlers, as a Flask blueprint.

    Mount :attr:`blueprint` (under any ``url_prefix``) or call :meth:`init_app`; register
    handlers with :meth:`handler`. Every option has the safe default; see docs/receiver.md.

    :param allowed_cert_url_prefixes: where certificates may be fetched from; see
        :class:`~receiver.certs.CertificateURLPolicy`. Defaults to Alibaba Cloud's.
    :param cert_fetcher: URL -> PEM bytes; defaults to
        :class:`~receiver.certs.RequestsCertificateFetcher`.
    :param cert_cache_ttl: seconds a fetched certificate is trusted without fetching again.
    :param clock: epoch seconds now; drives the Date check and the cache and dedupe windows.
    :param max_clock_skew: seconds the Date may differ from ``clock``; ``None`` disables.
    :param check_content_md5: whether the body must match Content-MD5. Turning it off leaves
        the body unauthenticated, since the signature does not cover it.
    :param max_body_bytes: larger bodies are refused unread.
    :param dedupe: ``True`` for per-process deduplication, a
        :class:`~receiver.dedupe.DedupeStore` for your own, ``None`` for none.
    :param name: the blueprint name; give each receiver in one app its own.
    :param rule: the URL rule within the blueprint; MNS posts to ``/notifications`` when the
        endpoint URL has no path.
    :param tracing: ``True`` starts an OpenTelemetry ``process`` span per push (needs the
        ``otel`` extra; docs/receiver.md#tracing).
    :param trace_parent: ``"http"`` (the messaging conventions' default: child of the HTTP
        server span, linked to the message's creation context) or ``"creation"`` (child of
        the creation context, linked to the HTTP span).
    :param tracer_provider: the OpenTelemetry tracer provider; the global one by default.
    :param standard_webhooks_secret: a ``whsec_`` secret, or several (the old and the new
        during a rotation): each push must then also carry a Standard Webhooks signature that
        one of them verifies, with a ``webhook-timestamp`` within 5 minutes of ``clock``
        (docs/receiver.md#standard-webhooks).
    """

    def __init__(
        self,
        *,
        allowed_cert_url_prefixes: Iterable[str] = OFFICIAL_CERT_URL_PREFIXES,
        cert_fetcher: CertificateFetcher | None = None,
        cert_cache_ttl: float = 3600.0,
        clock: Callable[[], float] = time.time,
        max_clock_skew: float | None = 900.0,
        check_content_md5: bool = True,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        dedupe: bool | DedupeStore | None = None,
        name: str = "mns_receiver",
        rule: str = "/notifications",
        tracing: bool = False,
        trace_parent: str = "http",
        tracer_provider: Any = None,
        standard_webhooks_secret: str | Iterable[str] | None = None,
    ) -> None:
        self.policy = CertificateURLPolicy(allowed_cert_url_prefixes)
        self.certificates = CertificateCache(
            cert_fetcher or RequestsCertificateFetcher(),
            policy=self.policy,
            ttl=cert_cache_ttl,
            timer=clock,
        )
        self.clock = clock
        self.max_clock_skew = max_clock_skew
        self.check_content_md5 = check_content_md5
        self.max_body_bytes = max_body_bytes
        self.standard_webhook_keys = (
            () if standard_webhooks_secret is None else secret_keys(standard_webhooks_secret)
        )
        self.dedupe = _dedupe_store(dedupe, clock)
        self.routes: list[HandlerRoute] = []
        self.tracer: Any = None
        if tracing:  # only now: without the otel extra nothing of OpenTelemetry is imported
            from receiver.tracing import PushTracer

            self.tracer = PushTracer(tracer_provider, trace_parent)
        self.blueprint = Blueprint(name, __name__)
        self.blueprint.add_url_rule(
            rule, endpoint="notifications", view_func=self._receive, methods=["POST"]
        )

    def init_app(self, app: Flask, *, url_prefix: str | None = None) -> None:
        """Register the blueprint on ``app`` (for application factories)."""
        app.register_blueprint(self.blueprint, url_prefix=url_prefix)

    def handler(
        self, *, topic: str | None = None, tag: str | None = None, subscription: str | None = None
    ) -> Callable[[HandlerT], HandlerT]:
        """Decorator registering a handler for notifications matching every given filter.

        ``topic`` matches the topic name, ``tag`` the message tag, ``subscription`` the
        subscription name. Registering the same filters twice is an error, because which
        handler runs would otherwise depend on import order.
        """

        def register(function: HandlerT) -> HandlerT:
            route = HandlerRoute(function, topic=topic, tag=tag, subscription=subscription)
            clash = next((r for r in self.routes if r.filters == route.filters), None)
            if clash is not None:
                raise ValueError(
                    f"{function.__qualname__} and {clash.handler.__qualname__} have the same"
                    f" filters: topic={topic!r}, tag={tag!r}, subscription={subscription!r}"
                )
            self.routes.append(route)
            return function

        return register

    def prefetch_certificate(self, url: str) -> None:
        """Fetch and cache the certificate at ``url`` now; it must pass the allowlist.

        Call it at startup to fail fast on a wrong URL, and, with ``gunicorn --preload``,
        to fetch once in the master rather than once per worker.
        """
        self.certificates.public_key(url)

    def verify(self, push: SignedPush) -> None:
        """Verify a push received by other means; raises a ``VerificationError`` subclass."""
        verify_push(
            push,
            public_key_for=self.certificates.public_key,
            now=self.clock(),
            max_clock_skew=self.max_clock_skew,
            require_content_md5=self.check_content_md5,
        )
        if self.standard_webhook_keys:
            verify_standard_webhook(
                self.standard_webhook_keys, push.headers, push.body, now=self.clock()
            )

    def _receive(self) -> Response:
        if self.tracer is None:
            return self._answer(_NO_SPAN)
        span = self.tracer.start(lowercase_headers(request.headers.items()))
        try:
            return self._answer(span)
        finally:
            span.end()

    def _answer(self, span: Any) -> Response:
        request_id = request.headers.get("x-mns-request-id", "-")
        try:
            push = self._read_push()
            self.verify(push)
        except VerificationError as exc:
            logger.warning(
                "rejected MNS push (request id %r, from %s): %s: %s",
                request_id,
                request.remote_addr,
                exc.reason,
                exc,
            )
            span.refused(exc.reason, str(exc))
            return Response(status=403)
        try:
            notification = parse_notification(push.body, push.headers)
        except MalformedNotificationError as exc:
            logger.warning("unparseable MNS push (request id %r): %s", request_id, exc)
            span.refused("malformed", str(exc))
            return Response(status=400)
        span.notification(notification)
        status, outcome = self._dispatch(notification)
        span.answered(status, outcome)
        return Response(status=status)

    def _read_push(self) -> SignedPush:
        body = read_body_at_most(request.stream, request.content_length, self.max_body_bytes)
        return SignedPush(
            method=request.method,
            resource=request_uri_as_sent(request.environ),
            headers=lowercase_headers(request.headers.items()),
            body=body,
        )

    def _dispatch(self, notification: Notification) -> tuple[int, str]:
        """Run the selected handler; return the status to answer and the outcome (``handled``,
        ``handler_failed``, ``no_handler``, ``duplicate``)."""
        route = select_route(self.routes, notification)
        if route is None:
            logger.error(
                "no handler for MNS message %r (topic %r, subscription %r, tag %r)",
                notification.message_id,
                notification.topic_name,
                notification.subscription_name,
                notification.message_tag,
            )
            return 500, "no_handler"
        if self.dedupe is None:
            return _run_handler(route, notification)
        key = dedupe_key(notification)
        if not self.dedupe.claim(key):
            logger.info("duplicate MNS message %r skipped", notification.message_id)
            return 204, "duplicate"
        status, outcome = _run_handler(route, notification)
        if status != 204:
            self.dedupe.release(key)  # so the sender's retry runs the handler again
        return status, outcome


class _NoSpan:
    """The push's span when tracing is off: every call does nothing."""

    def notification(self, notification: Notification) -> None:
        return None

    def refused(self, reason: str, description: str) -> None:
        return None

    def answered(self, status: int, outcome: str) -> None:
        return None


_NO_SPAN = _NoSpan()


def _run_handler(route: HandlerRoute, notification: Notification) -> tuple[int, str]:
    try:
        route.handler(notification)
    except Exception:
        logger.exception(
            "handler %s failed on MNS message %r",
            getattr(route.handler, "__qualname__", repr(route.handler)),
            notification.message_id,
        )
        return 500, "handler_failed"
    return 204, "handled"


def _dedupe_store(
    dedupe: bool | DedupeStore | None, clock: Callable[[], float]
) -> DedupeStore | None:
    if dedupe is None or dedupe is False:
        return None
    if dedupe is True:
        return InMemoryDedupeStore(timer=clock)
    if isinstance(dedupe, DedupeStore):
        return dedupe
    raise TypeError(f"dedupe must be True, None or a DedupeStore, not {type(dedupe).__name__}")
