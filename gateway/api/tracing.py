"""Spans of the XML and JSON APIs: one per request, named and attributed per the messaging
conventions for message operations (:mod:`gateway.observability.messaging_spans`), and the
creation context each new message carries.

With tracing off (:data:`~gateway.observability.tracing.NO_TRACING`) no hook is installed and
every helper returns at its first line, leaving messages as they were.

The request's span is started when its operation is known (a view calls :func:`operation`),
back-dated to the request's arrival, so its parent can be the message's own ``traceparent`` when
the request carries none: an SDK that sets the SystemProperty but sends no header still gets one
trace. Requests no view names (topics, queues, subscriptions, account) get an HTTP-named span
when they end.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from flask import Flask, Response, g, request

from gateway.api.context import gateway
from gateway.observability import messaging_spans as names
from gateway.observability.tracing import (
    NO_SPAN,
    TRACEPARENT,
    TRACESTATE,
    Carrier,
    Span,
    SpanKind,
    Tracing,
)
from gateway.protocol.properties import trace_context, with_trace_context
from gateway.protocol.trace_context import normalized_carrier
from gateway.queues.records import NewMessage, QueueMessage, SentMessage
from gateway.topics.records import TopicMessage

#: Paths that get no span: probes, metrics and certificates are not MNS operations.
UNTRACED_PREFIXES = ("/healthz", "/readyz", "/metrics", "/certs/", "/console", "/static")


def install_tracing(app: Flask, tracing: Tracing) -> None:
    """Hooks ending each request's span; none at all when tracing is off."""
    if not tracing.enabled:
        return

    @app.before_request
    def note_arrival() -> None:
        g.trace_started_ns = time.time_ns()

    @app.after_request
    def note_status(response: Response) -> Response:
        g.trace_status = response.status_code
        return response

    @app.teardown_request
    def end_span(error: BaseException | None) -> None:
        span = g.pop("span", None)
        if span is None:
            if request.path.startswith(UNTRACED_PREFIXES):
                return
            rule = request.url_rule.rule if request.url_rule else request.path
            span = _start(tracing, f"{request.method} {rule}", {}, None)
        status = g.get("trace_status", 500)
        span.set({names.HTTP_STATUS: status})
        code = g.get("error_code")
        if code or status >= 500:
            span.fail(code or "InternalError")
        span.end()


def request_carrier() -> dict[str, str]:
    """The caller's trace context, from the request's ``traceparent`` and ``tracestate``
    headers, parsed and written anew (:mod:`gateway.protocol.trace_context`): empty when its
    ``traceparent`` is missing or invalid, and a ``tracestate`` within W3C's limits."""
    environ = request.environ
    return normalized_carrier(
        {
            TRACEPARENT: environ.get("HTTP_TRACEPARENT", ""),
            TRACESTATE: environ.get("HTTP_TRACESTATE", ""),
        }
    )


def _start(
    tracing: Tracing,
    name: str,
    attributes: dict[str, str],
    creation: Carrier | None,
    links: Sequence[Carrier] = (),
) -> Span:
    return tracing.start(
        name,
        SpanKind.SERVER,
        parent=request_carrier() or creation or None,
        links=links,
        attributes=attributes,
        start_ns=g.get("trace_started_ns"),
    )


def operation(
    operation_type: str,
    action: str,
    destination: str,
    creation: Carrier | None = None,
    links: Sequence[Carrier] = (),
) -> Span:
    """This request's span, started now as ``{operation_type} {destination}``; its parent is the
    request's ``traceparent``, else ``creation`` (the message's own), else none."""
    tracing = gateway().tracing
    if not tracing.enabled:
        return NO_SPAN
    span = g.get("span")
    if span is None:
        attributes = names.operation_attributes(
            operation_type, action, destination, g.get("request_id", "")
        )
        span = _start(
            tracing, names.span_name(operation_type, destination), attributes, creation, links
        )
        g.span = span
    return span


def traced_sends(action: str, queue: str, messages: list[NewMessage]) -> list[NewMessage]:
    """``messages`` as they are to be stored: each carries its creation context, the
    publisher's if it set one, else this request's ``send`` span's (or, in a batch, its own
    ``create`` span's, a child of the ``send`` span)."""
    if not gateway().tracing.enabled:
        return messages
    first = trace_context(messages[0].properties) if messages else {}
    span = operation("send", action, queue, first if len(messages) == 1 else None)
    if len(messages) == 1:
        return [
            replace(
                messages[0], properties=with_trace_context(messages[0].properties, span.carrier())
            )
        ]
    span.set({names.BATCH_COUNT: len(messages)})
    return [_created(span, queue, message) for message in messages]


def _created(send: Span, queue: str, message: NewMessage) -> NewMessage:
    if trace_context(message.properties):
        return message
    create = gateway().tracing.start(
        names.span_name("create", queue),
        SpanKind.PRODUCER,
        parent=send,
        attributes={
            names.MESSAGING_SYSTEM: names.SYSTEM,
            names.OPERATION_TYPE: "create",
            names.OPERATION_NAME: "create",
            names.DESTINATION: queue,
        },
    )
    try:
        return replace(message, properties=with_trace_context(message.properties, create.carrier()))
    finally:
        create.end()


def traced_sent(results: Sequence[SentMessage | Exception]) -> None:
    sent = [r for r in results if isinstance(r, SentMessage)]
    if len(sent) == 1 and len(results) == 1:
        g.get("span", NO_SPAN).set({names.MESSAGE_ID: sent[0].message_id})


def traced_publish(message: TopicMessage) -> TopicMessage:
    """A topic message carrying its creation context (as :func:`traced_sends`)."""
    if not gateway().tracing.enabled:
        return message
    span = operation(
        "send", "PublishMessage", message.topic_name, trace_context(message.attributes)
    )
    span.set({names.MESSAGE_ID: message.id, names.SMQ_MESSAGE_TAG: message.tag})
    return replace(message, attributes=with_trace_context(message.attributes, span.carrier()))


def traced_receive(action: str, queue: str, messages: Sequence[QueueMessage]) -> None:
    """The ``receive`` span's attributes; each message's creation context is linked to."""
    if not gateway().tracing.enabled:
        return
    creations = [trace_context(m.properties) for m in messages]
    span = operation("receive", action, queue, links=[c for c in creations if c])
    span.set(
        {
            names.BATCH_COUNT: len(messages),
            names.MESSAGE_ID: messages[0].message_id if len(messages) == 1 else None,
            names.SMQ_RECEIPT_HANDLES: [m.receipt_handle or "" for m in messages],
            names.SMQ_NEXT_VISIBLE_TIME: (
                messages[0].next_visible_time if len(messages) == 1 else None
            ),
        }
    )


def traced_settle(
    action: str,
    queue: str,
    handles: Sequence[str],
    message_ids: Sequence[str] = (),
    next_visible_time: int | None = None,
) -> None:
    """A ``settle`` span: deletes and visibility changes."""
    if not gateway().tracing.enabled:
        return
    operation("settle", action, queue).set(
        {
            names.SMQ_RECEIPT_HANDLES: list(handles),
            names.BATCH_COUNT: len(handles) if len(handles) > 1 else None,
            names.MESSAGE_ID: message_ids[0] if len(message_ids) == 1 else None,
            names.SMQ_NEXT_VISIBLE_TIME: next_visible_time,
        }
    )
