"""The request's span: started by the operation layer's tracing hook
(:mod:`gateway.operations.tracing`) once an operation knows its name and attributes, ended here
with the status the request was answered with.

Requests that ran no messaging operation (topics, queues, subscriptions, account) get an
HTTP-named span when they end. With tracing off (:data:`~gateway.observability.tracing.
NO_TRACING`) nothing is installed.
"""

from __future__ import annotations

import time

from flask import Flask, Response

from gateway.api.context import current_request, request_carrier, request_globals
from gateway.observability import messaging_spans as names
from gateway.observability.tracing import SpanKind, Tracing

#: Paths that get no span: probes, metrics and certificates are not MNS operations.
UNTRACED_PREFIXES = ("/healthz", "/readyz", "/metrics", "/certs/", "/console", "/static")


def install_tracing(app: Flask, tracing: Tracing) -> None:
    """Hooks ending each request's span; none at all when tracing is off."""
    if not tracing.enabled:
        return

    @app.before_request
    def note_arrival() -> None:
        request_globals().trace_started_ns = time.time_ns()

    @app.after_request
    def note_status(response: Response) -> Response:
        request_globals().trace_status = response.status_code
        return response

    @app.teardown_request
    def end_span(error: BaseException | None) -> None:
        current, values = current_request(), request_globals()
        caller = values.pop("caller", None)
        span = caller.span if caller is not None else None
        if span is None:
            if current.path.startswith(UNTRACED_PREFIXES):
                return
            rule = current.url_rule.rule if current.url_rule else current.path
            span = tracing.start(
                f"{current.method} {rule}",
                SpanKind.SERVER,
                parent=request_carrier() or None,
                start_ns=values.get("trace_started_ns"),
            )
        status = values.get("trace_status", 500)
        span.set({names.HTTP_STATUS: status})
        code = values.get("error_code")
        if code or status >= 500:
            span.fail(code or "InternalError")
        span.end()
