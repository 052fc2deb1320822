"""The Flask side of the MNS wire: the raw request, raw query parameters, XML responses.

Views use these helpers instead of ``request.args``: MNS clients put receipt handles in the query
string unencoded, and a form-decoding view of it would turn ``+`` into a space
(docs/protocol.md#raw-request-uri).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from flask import Response, current_app, g, request

from gateway.auth.signatures import IncomingRequest
from gateway.auth.temporary_credentials import AccessKeys
from gateway.errors import Answer, RefusedError, answer_for
from gateway.errors.mns import MNSError, host_id_for
from gateway.observability.oplog import Field, NullOperationLog, OperationLog, RequestFacts
from gateway.observability.tracing import NO_TRACING, Tracing
from gateway.protocol.integers import integer_in_range
from gateway.protocol.json_body import JSON_CONTENT_TYPE, JSON_VERSION, JsonObject
from gateway.protocol.json_body import render as render_json
from gateway.protocol.request_ids import new_request_id
from gateway.protocol.request_target import parse_request_target, query_parameters
from gateway.protocol.xml import XmlNode, render_document
from gateway.store.receive_limits import ReceiveLimits

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from gateway.api.certs import CertificateSource
    from gateway.config.settings import Settings
    from gateway.observability.metrics import GatewayMetrics
    from gateway.store.base import Store

XML_CONTENT_TYPE = "text/xml;charset=utf-8"


@dataclass(frozen=True)
class GatewayContext:
    """What the views need, typed, attached to the Flask app as ``app.extensions["mns"]``.

    ``oplog`` receives the operation records of LoggingEnabled queues and topics; ``metrics``
    and ``certificates`` (the signing key ring) are optional so that tests can leave them out.
    """

    settings: Settings
    store: Store
    access_keys: dict[str, str]
    oplog: OperationLog = field(default_factory=NullOperationLog)
    metrics: GatewayMetrics | None = None
    certificates: CertificateSource | None = None
    #: OpenTelemetry spans of each request (gateway/api/tracing.py); no-ops unless configured.
    tracing: Tracing = NO_TRACING
    #: What requests are authenticated against: ``access_keys`` and the temporary credentials
    #: issued into ``store``.
    keys: AccessKeys = field(init=False)
    #: Queues' TenantRateLimitPolicy on receives (set through the control plane).
    receive_limits: ReceiveLimits = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", AccessKeys(self.access_keys, self.store.credentials))
        object.__setattr__(self, "receive_limits", ReceiveLimits(self.store.control))


def gateway() -> GatewayContext:
    return current_app.extensions["mns"]


def log_operations(
    enabled: bool,
    resource: Field,
    name: str,
    build: Callable[[RequestFacts], Iterable[dict[str, object]]],
) -> None:
    """Hand this request's operation records to the operation log, for a LoggingEnabled queue or
    topic; the records are only built when somebody will read them."""
    if not enabled:
        return
    log = gateway().oplog
    for record in build(request_facts(resource, name)):
        log.write(record)


def request_facts(resource: Field, name: str) -> RequestFacts:
    """What every operation-log record of this request shares."""
    return RequestFacts(
        resource=resource,
        name=name,
        request_id=g.get("request_id", ""),
        remote_address=request.remote_addr or "",
        account_id=gateway().settings.account_id,
        process_time_ms=(time.monotonic() - g.get("started", time.monotonic())) * 1000,
        trace_id=span.trace_id if (span := g.get("span")) is not None else "",
    )


def raw_uri() -> str:
    """Path and query exactly as the client sent them (what the signature covers); an
    absolute-form target was already reduced to them (:func:`origin_form_environ`)."""
    environ = request.environ
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
    return IncomingRequest(
        method=request.method,
        raw_uri=raw_uri(),
        headers=_lowercase_headers(request.environ),
        body=request.get_data(cache=True),
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
    return request.headers.get("x-mns-with-meta", "").lower() == "true"


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
    return request.environ.get("HTTP_X_MNS_VERSION", "").strip() == JSON_VERSION


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
    """``HostId`` of this request (:func:`gateway.errors.mns.host_id_for`)."""
    return host_id_for(gateway().settings.base_url, request.environ.get("HTTP_HOST", ""))


def current_request_id() -> str:
    """This request's one id: made by its first hook, and the same in the ``x-mns-request-id``
    header, the error body and the operation log, however early the request was refused."""
    made = g.get("request_id")
    if made is None:
        made = g.request_id = new_request_id()
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
    g.error_code = answer.code  # for the request's span (gateway/api/tracing.py)
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
    prefix = request.headers.get("x-mns-prefix", "")
    marker = request.headers.get("x-mns-marker", "")
    raw_limit = request.headers.get("x-mns-ret-number")
    if raw_limit is None:
        return prefix, marker, default_limit
    limit = integer_in_range(raw_limit, 1, 1000)
    if limit is None:
        raise MNSError(
            "InvalidArgument", "The value of x-mns-ret-number should between 1 and 1000."
        )
    return prefix, marker, limit
