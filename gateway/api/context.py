"""The Flask side of the MNS wire: the raw request, raw query parameters, XML responses.

Views use these helpers instead of ``request.args``: MNS clients put receipt handles in the query
string unencoded, and a form-decoding view of it would turn ``+`` into a space
(docs/protocol.md#raw-request-uri).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from flask import Request, Response, current_app, g, request

from gateway.auth.signatures import IncomingRequest
from gateway.auth.temporary_credentials import AccessKeys
from gateway.errors import Answer, RefusedError, answer_for
from gateway.errors.mns import MNSError
from gateway.observability.tracing import NO_TRACING, TRACEPARENT, TRACESTATE, Tracing
from gateway.operations import Caller, Operations
from gateway.protocol.host_ids import host_id_for
from gateway.protocol.integers import integer_in_range
from gateway.protocol.json_body import JSON_CONTENT_TYPE, JSON_VERSION, JsonObject
from gateway.protocol.json_body import render as render_json
from gateway.protocol.request_ids import new_request_id
from gateway.protocol.request_target import parse_request_target, query_parameters
from gateway.protocol.trace_context import normalized_carrier
from gateway.protocol.xml import XmlNode, render_document

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from flask.ctx import _AppCtxGlobals

    from gateway.api.certs import CertificateSource
    from gateway.config.settings import Settings
    from gateway.observability.metrics import GatewayMetrics
    from gateway.store import Store

XML_CONTENT_TYPE = "text/xml;charset=utf-8"


@dataclass(frozen=True)
class GatewayContext:
    """What the views need, typed, attached to the Flask app as ``app.extensions["mns"]``.

    ``operations`` is the operation layer every view calls (:mod:`gateway.operations`), with
    the hooks (tracing, the operation log, metrics, outages) already around it; ``metrics`` and
    ``certificates`` (the signing key ring) are optional so that tests can leave them out.
    """

    operations: Operations
    #: What requests are authenticated against: the configured access keys and the temporary
    #: credentials issued into the store.
    keys: AccessKeys
    metrics: GatewayMetrics | None = None
    certificates: CertificateSource | None = None
    #: OpenTelemetry spans of each request (gateway/api/tracing.py); no-ops unless configured.
    tracing: Tracing = NO_TRACING

    @property
    def settings(self) -> Settings:
        return self.operations.settings

    @property
    def store(self) -> Store:
        return self.operations.store


def current_request() -> Request:
    """``flask.request`` itself, not its context-local proxy. On Python 3.11 every attribute
    read through the proxy is first looked for on the proxy and fails with a formatted
    AttributeError before the proxy forwards it: 29 of those in a publish were 10 % of its
    instructions (docs/benchmarks.md#the-publish-path). Code that reads the request takes it
    from here."""
    return request._get_current_object()  # type: ignore[attr-defined, no-any-return]


def request_globals() -> _AppCtxGlobals:
    """``flask.g`` itself, for the same reason as :func:`current_request`."""
    return g._get_current_object()  # type: ignore[attr-defined, no-any-return]


def gateway() -> GatewayContext:
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    return app.extensions["mns"]  # type: ignore[no-any-return]


def operations() -> Operations:
    return gateway().operations


def caller() -> Caller:
    """Who asks, for the operation layer: this request's id, the client's address, when it
    arrived and the trace context it carried. One per request, so an operation's span is the
    request's, which :func:`gateway.api.tracing.install_tracing` ends."""
    values = vars(request_globals())
    made = values.get("caller")
    if made is None:
        traced = gateway().tracing.enabled
        made = values["caller"] = Caller(
            request_id=current_request_id(),
            remote_address=current_request().remote_addr or "",
            started=values.get("started") or time.monotonic(),
            # Read only when somebody traces: the headers are checked and written anew.
            trace_parent=request_carrier() if traced else {},
            arrived_ns=values.get("trace_started_ns"),
        )
    return made


def request_carrier() -> dict[str, str]:
    """The caller's trace context, from the request's ``traceparent`` and ``tracestate``
    headers, parsed and written anew (:mod:`gateway.protocol.trace_context`): empty when its
    ``traceparent`` is missing or invalid, and a ``tracestate`` within W3C's limits."""
    environ = current_request().environ
    return normalized_carrier(
        {
            TRACEPARENT: environ.get("HTTP_TRACEPARENT", ""),
            TRACESTATE: environ.get("HTTP_TRACESTATE", ""),
        }
    )


def raw_uri() -> str:
    """Path and query exactly as the client sent them (what the signature covers); an
    absolute-form target was already reduced to them (:func:`origin_form_environ`)."""
    environ = current_request().environ
    uri = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if uri:
        return uri
    path = quote(
        environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", ""), safe="/:@!$&'()*+,;=-._~"
    )
    query = environ.get("QUERY_STRING", "")
    return f"{path}?{query}" if query else path


def origin_form_environ(environ: dict[str, Any]) -> None:
    """Rewrite an absolute-form request target (``PUT http://host/queues/q``) in ``environ`` as
    the origin form it stands for, before anything routes or authenticates it.

    Servers fill the environ differently from such a target (gunicorn's PATH_INFO holds the
    path, gevent's the whole URL), so every key is set again from the one parse of
    :func:`~gateway.protocol.request_target.parse_request_target`; the target's authority
    replaces the Host header, as RFC 9112 section 3.2.2 requires.
    """
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if not raw:
        return
    target = parse_request_target(raw)
    if target.authority is None:
        return
    environ.update(
        {
            "RAW_URI": target.resource,
            "REQUEST_URI": target.resource,
            "PATH_INFO": unquote(target.path, "latin-1"),
            "QUERY_STRING": target.query,
            "HTTP_HOST": target.authority,
        }
    )


class OriginFormTargets:
    """WSGI middleware applying :func:`origin_form_environ` to every request, whichever server
    (gevent's, gunicorn's gthread, werkzeug's) built the environ."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        origin_form_environ(environ)
        return self.app(environ, start_response)


def _lowercase_headers(environ: dict[str, Any]) -> dict[str, str]:
    """Header names from the WSGI environ, lowercased (cheaper than ``request.headers``)."""
    headers = {
        key[5:].replace("_", "-").lower(): value
        for key, value in environ.items()
        if key.startswith("HTTP_")
    }
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.replace("_", "-").lower()] = environ[key]
    return headers


def incoming_request() -> IncomingRequest:
    current = current_request()
    return IncomingRequest(
        method=current.method,
        raw_uri=raw_uri(),
        headers=_lowercase_headers(current.environ),
        body=current.get_data(cache=True),
    )


def query_params() -> dict[str, str]:
    """The query's parameters exactly as signature V4 signs them (names lowercased, names and
    values trimmed, ``+`` kept literally): :func:`~gateway.protocol.request_target.
    query_parameters`, the one parse the signature check uses too."""
    return query_parameters(raw_uri().partition("?")[2])


def is_meta_override() -> bool:
    return query_params().get("metaoverride", "").lower() == "true"


def with_meta() -> bool:
    """``x-mns-with-meta: true``: a listing includes each item's attributes."""
    return current_request().headers.get("x-mns-with-meta", "").lower() == "true"


def xml_response(root: str, nodes: Sequence[XmlNode], status: int = 200) -> Response:
    return Response(render_document(root, nodes), status=status, content_type=XML_CONTENT_TYPE)


def empty_response(status: int, location: str | None = None) -> Response:
    """A response without a body, and so without a Content-Type (werkzeug would say
    ``text/html``, which no MNS response is: docs/protocol.md#response-shape)."""
    response = Response(b"", status=status)
    del response.headers["Content-Type"]
    if location:
        response.headers["Location"] = location
    return response


def is_json_request() -> bool:
    """Whether the client speaks the JSON message API (``x-mns-version: 2026-04-09``): its
    errors are JSON too, whatever the operation (docs/protocol.md#the-json-message-api)."""
    return current_request().environ.get("HTTP_X_MNS_VERSION", "").strip() == JSON_VERSION


def json_response(document: JsonObject, status: int = 200) -> Response:
    return Response(render_json(document), status=status, content_type=JSON_CONTENT_TYPE)


def service_status(response: Response) -> None:
    """The status line as the service writes it, ``201 Created`` (werkzeug writes the reason
    phrase in capitals, ``201 CREATED``); an unknown code keeps werkzeug's."""
    try:
        phrase = HTTPStatus(response.status_code).phrase
    except ValueError:
        return
    response.status = f"{response.status_code} {phrase}"


def host_id() -> str:
    """``HostId`` of this request (:func:`gateway.protocol.host_ids.host_id_for`)."""
    host = current_request().environ.get("HTTP_HOST", "")
    return host_id_for(gateway().settings.base_url, host)


def current_request_id() -> str:
    """This request's one id: made by its first hook, and the same in the ``x-mns-request-id``
    header, the error body and the operation log, however early the request was refused."""
    values = request_globals()
    made = values.get("request_id")
    if made is None:
        made = values.request_id = new_request_id()
    return made


def error_fields(error: RefusedError | Answer) -> list[tuple[str, str]]:
    """Code, Message, RequestId and HostId: the error body of either wire format."""
    return [
        ("Code", error.code),
        ("Message", error.message),
        ("RequestId", current_request_id()),
        ("HostId", host_id()),
    ]


def answer_response(answer: Answer) -> Response:
    """An error's :class:`~gateway.errors.Answer` in the client's wire format."""
    request_globals().error_code = answer.code  # for the request's span (gateway/api/tracing.py)
    if is_json_request():
        response = json_response(dict(error_fields(answer)), status=answer.status)
    else:
        response = xml_response("Error", list(error_fields(answer)), status=answer.status)
    if answer.retry_after is not None:
        response.headers["Retry-After"] = str(answer.retry_after)
    return response


def error_response(error: MNSError) -> Response:
    return answer_response(answer_for(error))


def list_paging(default_limit: int = 1000) -> tuple[str, str, int]:
    """``x-mns-prefix``, ``x-mns-marker`` and ``x-mns-ret-number`` (1-1000, default 1000)."""
    headers = current_request().headers
    prefix = headers.get("x-mns-prefix", "")
    marker = headers.get("x-mns-marker", "")
    raw_limit = headers.get("x-mns-ret-number")
    if raw_limit is None:
        return prefix, marker, default_limit
    limit = integer_in_range(raw_limit, 1, 1000)
    if limit is None:
        raise MNSError(
            "InvalidArgument", "The value of x-mns-ret-number should between 1 and 1000."
        )
    return prefix, marker, limit
