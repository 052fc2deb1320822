"""``create_app``: wires the MNS API blueprints, authentication, error mapping and health checks.

Every side effect arrives as an argument (store, clock, access keys, operation log, metrics, the
certificates of the signing keys), typed in one :class:`~gateway.api.context.GatewayContext`, so
tests build an app on a temporary store with a fixed clock and drive it through Flask's test
client or a real server.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response
from werkzeug.exceptions import HTTPException, InternalServerError
from werkzeug.routing import Rule

from gateway.api import account, admin, dev, jsonapi, queues, topics
from gateway.api.certs import CertificateSource, create_certs_blueprint
from gateway.api.console import console_error_page, install_console
from gateway.api.context import (
    GatewayContext,
    OriginFormTargets,
    answer_response,
    current_request,
    current_request_id,
    gateway,
    incoming_request,
    is_json_request,
    request_globals,
    service_status,
)
from gateway.api.control.app import ControlPlaneApp, ControlPlaneDispatch
from gateway.api.environ import REFUSAL, size_body
from gateway.api.probes import create_probes_blueprint
from gateway.api.tracing import install_tracing
from gateway.auth.endpoint_acl import EndpointGate
from gateway.auth.signatures import authenticate
from gateway.auth.temporary_credentials import AccessKeys
from gateway.config.settings import Settings
from gateway.errors import TryAgainError, answer_for
from gateway.errors.mns import MNSError, body_too_large
from gateway.observability.metrics import GatewayMetrics
from gateway.observability.oplog import OperationLog
from gateway.observability.tracing import NO_TRACING, Tracing
from gateway.operations.standard import standard_operations
from gateway.protocol import MNS_VERSION
from gateway.protocol.json_body import JSON_VERSION
from gateway.store import Store

log = logging.getLogger(__name__)

ENDPOINT_REFUSAL = (
    "The endpoint is disabled, or this client's address is not on its access control list."
)
#: Paths served without MNS authentication: probes, metrics and signing certificates.
PUBLIC_PREFIXES = ("/healthz", "/readyz", "/metrics", "/certs/")
#: The web console signs people in itself (docs/console.md), when it is on.
CONSOLE_PREFIX = "/console"


def create_app(
    settings: Settings,
    store: Store,
    access_keys: dict[str, str],
    *,
    clock: Callable[[], float] = time.time,
    oplog: OperationLog | None = None,
    metrics: GatewayMetrics | None = None,
    certificates: CertificateSource | None = None,
    alive: Callable[[], bool] = lambda: True,
    tracing: Tracing = NO_TRACING,
) -> Flask:
    """The gateway's WSGI app over ``store``. ``alive`` is what ``/healthz`` asks: whether the
    process can do its work (:func:`gateway.composition.build_app` asks its delivery worker)."""
    app = GatewayFlask("gateway")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    # First of all hooks: a request refused by the next ones has its id already.
    app.before_request(_name_the_request)
    _answer_refusals(app)
    _route_only_declared_methods(app)
    context = GatewayContext(
        standard_operations(settings, store, oplog=oplog, metrics=metrics, tracing=tracing),
        AccessKeys(access_keys, store.credentials),
        metrics=metrics,
        certificates=certificates,
        tracing=tracing,
    )
    app.extensions["mns"] = context
    install_tracing(app, tracing)
    # ``POST /`` calls of the control-plane API (Mns-open 2022-01-19) go to its own JSON app;
    # the XML API has no such route (docs/control-plane.md).
    control = ControlPlaneApp(context.operations, context.keys, clock)
    app.wsgi_app = OriginFormTargets(  # type: ignore[method-assign]
        ControlPlaneDispatch(app.wsgi_app, control)
    )
    app.register_blueprint(topics.blueprint)
    app.register_blueprint(queues.blueprint)
    app.register_blueprint(admin.blueprint)
    app.register_blueprint(account.blueprint)
    if settings.inbox:
        app.register_blueprint(dev.blueprint)
    if certificates is not None:
        app.register_blueprint(create_certs_blueprint(certificates))
    _install_hooks(app, clock, settings.console, EndpointGate(store.control.endpoint, clock))
    # After the hooks: its dispatch must run once the request is authenticated.
    app.register_blueprint(jsonapi.blueprint)
    if settings.console:
        install_console(app, store, clock)
    app.register_blueprint(create_probes_blueprint(ready=store.ping, metrics=metrics, alive=alive))
    return app


class GatewayFlask(Flask):
    """Flask, but an outage met outside a view (saving a console session) is not logged as a
    bug: it is answered like any other outage, and the store logs the outage once."""

    def log_exception(self, exc_info: Any) -> None:
        if not isinstance(exc_info[1], TryAgainError):
            super().log_exception(exc_info)


def _name_the_request() -> None:
    current_request_id()


def _answer_refusals(app: Flask) -> None:
    """A request the server in front refused (:mod:`gateway.serving.http1.refusal`) is answered with
    its error before anything else runs."""

    @app.before_request
    def raise_refusal() -> None:
        if (refusal := current_request().environ.get(REFUSAL)) is not None:
            raise refusal


class DeclaredMethodsRule(Rule):
    """A URL rule that answers exactly the methods its view declares.

    Werkzeug adds HEAD to every GET rule, running the GET view and dropping the body: on
    ``/queues/<name>/messages`` that is a ReceiveMessage whose receipt handle nobody sees. MNS
    documents no HEAD anywhere, so a HEAD is an unknown method like any other.
    """

    def __init__(self, string: str, *args: Any, methods: Any = None, **kwargs: Any) -> None:
        super().__init__(string, *args, methods=methods, **kwargs)
        declared = {method.upper() for method in methods or ()}
        if self.methods is not None and "HEAD" not in declared:
            self.methods.discard("HEAD")


def _route_only_declared_methods(app: Flask) -> None:
    """Only the documented method and path pairs reach a view; everything else is an
    ``InvalidRequestURL`` from :func:`_install_hooks`' error mapping: no implicit HEAD or
    OPTIONS, and no redirect (werkzeug would answer ``//`` in a path with a 308 to a URL built
    from the client's Host header, which is not an MNS answer)."""
    app.url_rule_class = DeclaredMethodsRule
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False
    app.url_map.merge_slashes = False

    @app.before_request
    def refuse_empty_path_segments() -> None:
        # Werkzeug collapses leading slashes before routing ("//queues" would list queues).
        if "//" in current_request().environ.get("PATH_INFO", ""):
            raise MNSError("InvalidRequestURL")


def enforce_body_limit(limit: int) -> None:
    """Refuse a body over ``limit`` before anything parses it.

    Behind the gateway's worker classes the body arrives sized and within the limit already
    (docs/http.md#framing); this is the same rule for any other WSGI server. With a
    Content-Length it is one comparison; a chunked body is read within the limit and made sized.
    """
    environ = current_request().environ
    declared = environ.get("CONTENT_LENGTH")
    if declared and int(declared) > limit:
        raise body_too_large(limit)
    size_body(environ, limit)


def is_console_path(path: str) -> bool:
    return path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/")


def _install_hooks(
    app: Flask, clock: Callable[[], float], console: bool, endpoint: EndpointGate
) -> None:
    @app.before_request
    def authenticate_request() -> None:
        current, values = current_request(), request_globals()
        values.started = time.monotonic()
        if current.path.startswith(PUBLIC_PREFIXES):
            return
        # The public endpoint's switch and allow-list, set through the control plane
        # (EnableEndpoint, AuthorizeEndpointAcl): checked before anything else, as a network rule,
        # for the console as for the API (it sends, publishes and deletes as the API does).
        if not endpoint.allows(current.remote_addr or ""):
            raise MNSError("AccessDenied", ENDPOINT_REFUSAL)
        if console and is_console_path(current.path):
            return  # the console signs people in itself (docs/console.md)
        context = gateway()
        enforce_body_limit(context.settings.max_body_bytes)
        values.access_key_id = authenticate(
            incoming_request(), context.keys, clock(), context.settings.signing_region
        )

    @app.after_request
    def mns_headers(response: Response) -> Response:
        response.headers["x-mns-request-id"] = current_request_id()
        response.headers["x-mns-version"] = JSON_VERSION if is_json_request() else MNS_VERSION
        service_status(response)
        return response

    @app.errorhandler(Exception)
    def any_error(error: Exception) -> Response:
        """Every error, werkzeug's included, answered as :func:`gateway.errors.answer_for`
        decides (docs/protocol.md#error-codes-and-statuses); the console renders it as a page."""
        answer = answer_for(_in_mns_terms(error))
        current = current_request()
        if answer.log_traceback:
            log.exception("unhandled error in %s %s", current.method, current.path)
        # A TryAgainError is expected, not a bug: the store logs the outage once, and the
        # operation layer's outage hook counted the request (gateway.operations.outages).
        if console and is_console_path(current.path):
            return console_error_page(error, answer)
        return answer_response(answer)


def _in_mns_terms(error: Exception) -> Exception:
    """Werkzeug's own refusals in MNS terms: an unknown path or method is an invalid request
    URL; a body over the limit that arrived chunked, an invalid argument."""
    if isinstance(error, InternalServerError) and error.original_exception is not None:
        # What Flask hands over for an error raised outside a view (opening the session).
        error = error.original_exception  # type: ignore[assignment]
    if not isinstance(error, HTTPException):
        return error
    if error.code == 413:
        return body_too_large(gateway().settings.max_body_bytes)
    return MNSError("InvalidRequestURL")
