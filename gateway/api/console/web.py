"""The console's blueprint and what every page shares: sign-in required, CSRF checked on every
POST, the security headers, errors as pages, and the template helpers.

The page groups (:mod:`gateway.api.console.pages`, :mod:`gateway.api.console.queue_pages`,
…) add their views to :data:`blueprint`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from werkzeug.exceptions import HTTPException

from gateway.api.console.refused import refused_page, typed, was_refused
from gateway.api.console.security import (
    CSRF_FIELD,
    CSRF_HEADER,
    SECURITY_HEADERS,
    csrf_matches,
    new_csrf_token,
    session_still_valid,
)
from gateway.api.context import GatewayContext, gateway
from gateway.delivery.error_text import error_excerpt
from gateway.protocol.errors import MNSError
from gateway.store.console import ConsoleReads
from gateway.store.sign_in import SignInAttempts

log = logging.getLogger(__name__)

blueprint = Blueprint(
    "console",
    __name__,
    url_prefix="/console",
    template_folder="templates",
    static_folder="static",
)

#: How much of an endpoint's error text a page shows.
ERROR_TEXT_CHARS = 300

#: Views anyone may open: the sign-in page and the static files it needs.
OPEN_ENDPOINTS = frozenset({"console.sign_in", "console.static"})


@dataclass(frozen=True)
class ConsoleContext:
    """What the console adds to the gateway's context: its reads and its sign-in limiter."""

    reads: ConsoleReads
    limiter: SignInAttempts


def console() -> ConsoleContext:
    return current_app.extensions["mns-console"]


def mns() -> GatewayContext:
    return gateway()


def csrf_token() -> str:
    token = session.get("csrf")
    if not token:
        token = session["csrf"] = new_csrf_token()
    return token


@blueprint.before_request
def guard() -> Response | None:
    """POSTs need the session's CSRF token (nothing changes otherwise); pages need a session
    whose key pair is still configured unchanged."""
    if request.method == "POST":
        given = request.form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)
        if not csrf_matches(session.get("csrf"), given):
            return error_page(
                403, "Forbidden", "The form's CSRF token is missing or wrong; nothing was changed."
            )
    if request.endpoint in OPEN_ENDPOINTS:
        return None
    settings = mns().settings
    if not session_still_valid(
        session.get("key_id"),
        session.get("key_fingerprint"),
        mns().access_keys,
        settings.admin_access_keys,
    ):
        session.pop("key_id", None)
        return redirect(url_for("console.sign_in", next=request.full_path.rstrip("?")))
    return None


@blueprint.after_request
def headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response


@blueprint.errorhandler(MNSError)
def mns_error(error: MNSError) -> Response:
    """A refused action shows its page again with the API's code and message and what was
    typed (:mod:`gateway.api.console.refused`); a page that cannot be shown is an error page
    with the API's status."""
    if request.method == "POST":
        return refused_page(back_to(), error.code, error.message, error.status)
    return error_page(error.status, error.code, error.message)


@blueprint.errorhandler(HTTPException)
def http_error(error: HTTPException) -> Response:
    return error_page(error.code or 500, error.name, error.description or "")


@blueprint.errorhandler(Exception)
def internal_error(error: Exception) -> Response:
    log.exception("console error in %s %s", request.method, request.path)
    return error_page(500, "InternalError", "The console failed; the gateway's log has why.")


def error_page(status: int, code: str, message: str) -> Response:
    response = Response(
        render_template("error.html", code=code, message=message, status=status), status=status
    )
    return headers(response)


def back_to() -> str:
    """Where a form returns: its ``back`` field when it is a console path, else the overview."""
    target = request.form.get("back", "")
    if target.startswith("/console/") and not target.startswith("//"):
        return target
    return url_for("console.overview")


def done(message: str, target: str | None = None) -> Response:
    flash(message, "ok")
    return redirect(target or back_to())


def form_int(name: str, default: int, low: int, high: int) -> int:
    raw = request.values.get(name, "")
    try:
        value = int(raw) if raw.strip() else default
    except ValueError:
        abort(400, f"{name} must be a whole number.")
    return max(low, min(high, value))


@blueprint.app_template_filter("utc")
def utc(value: int | float | None, unit: str = "ms") -> str:
    """Epoch milliseconds (or seconds with ``unit="s"``) as ISO-8601 UTC; "-" for none."""
    if value is None or value == 0:
        return "-"
    seconds = value / 1000 if unit == "ms" else value
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


@blueprint.app_template_filter("error_text")
def error_text(value: str) -> str:
    """An endpoint's error as readable text: an HTML error page reduced to its words."""
    return error_excerpt(value, ERROR_TEXT_CHARS)


@blueprint.app_context_processor
def template_helpers() -> dict[str, Any]:
    def page_url(endpoint: str, **params: Any) -> str:
        query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
        base = url_for(endpoint)
        return f"{base}?{query}" if query else base

    return {
        "csrf_token": csrf_token,
        "csrf_field": CSRF_FIELD,
        "page_url": page_url,
        "typed": typed,
        "was_refused": was_refused,
        "signed_in_as": session.get("key_id"),
        "inbox_on": mns().settings.inbox if "mns" in current_app.extensions else False,
    }
