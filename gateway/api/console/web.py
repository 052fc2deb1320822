"""The console's blueprint and what every page shares: sign-in required, CSRF checked on every
POST, the security headers, errors as pages (the app's one error mapping, rendered), and the
template helpers.

The page groups (:mod:`gateway.api.console.pages`, :mod:`gateway.api.console.queue_pages`,
…) add their views to :data:`blueprint`.
"""

from __future__ import annotations

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
    g,
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
    console_target,
    csrf_matches,
    new_csrf_token,
    session_still_valid,
)
from gateway.api.context import GatewayContext, gateway
from gateway.delivery.error_text import error_excerpt
from gateway.errors import Answer
from gateway.errors.mns import MNSError
from gateway.store import ConsoleReads, SignInAttempts

blueprint = Blueprint(
    "console",
    __name__,
    url_prefix="/console",
    template_folder="templates",
    static_folder="static",
)

INTERNAL_PAGE_MESSAGE = "The console failed; the gateway's log has why."
#: How much of an endpoint's error text a page shows.
ERROR_TEXT_CHARS = 300

#: Views anyone may open: the sign-in page and the static files it needs.
OPEN_ENDPOINTS = frozenset({"console.sign_in", "console.static", "console.root"})


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
    if (unavailable := getattr(session, "unavailable", None)) is not None:
        raise unavailable  # the store could not be read: answered as the outage it is
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
        mns().keys.permanent,
        settings.admin_access_keys,
        current_app.secret_key,
    ):
        session.pop("key_id", None)
        return redirect(url_for("console.sign_in", next=request.full_path.rstrip("?")))
    g.console_action = True  # refused from here on, a form goes back to its page
    return None


@blueprint.after_request
def headers(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response


@blueprint.get("", endpoint="root")
def root() -> Response:
    """``/console`` to ``/console/`` by a relative Location: werkzeug's own redirect for the
    missing slash would name the host from the request's Host header."""
    return redirect(url_for("console.overview"), 308)


@blueprint.route("/<path:unknown>", methods=["GET", "POST"])
def not_found(unknown: str) -> Response:
    """Any other path under ``/console/`` is the console's 404 page, with its headers."""
    abort(404)


@blueprint.errorhandler(MNSError)
def mns_error(error: MNSError) -> Response:
    """A refused action shows its page again with the API's code and message and what was
    typed (:mod:`gateway.api.console.refused`); a page that cannot be shown, or a form refused
    before sign-in was checked, is an error page with the API's status."""
    if request.method == "POST" and g.get("console_action"):
        return refused_page(back_to(), error.code, error.message, error.status)
    return error_page(error.status, error.code, error.message)


def console_error_page(error: Exception, answer: Answer) -> Response:
    """An error's :class:`~gateway.errors.Answer` (the same as the API's) as the console's page;
    the app's one error handler hands every error under ``/console`` here. A page that does not
    exist or a form field out of range is said in the web's terms (404 Not Found), not in the
    API's (which has no such pages)."""
    if isinstance(error, HTTPException) and error.code is not None and error.code < 500:
        answer = Answer(error.code, error.name, error.description or "")
    message = INTERNAL_PAGE_MESSAGE if answer.log_traceback else answer.message
    response = error_page(answer.status, answer.code, message)
    if answer.retry_after is not None:
        response.headers["Retry-After"] = str(answer.retry_after)
    return response


def error_page(status: int, code: str, message: str) -> Response:
    response = Response(
        render_template("error.html", code=code, message=message, status=status), status=status
    )
    return headers(response)


def back_to() -> str:
    """Where a form returns: its ``back`` field when it is a console path, else the overview."""
    return console_target(request.form.get("back", ""), url_for("console.overview"))


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
    """Epoch milliseconds (or seconds with ``unit="s"``) in UTC, saying so ("2026-12-02
    00:18:29 UTC": every time on every page carries its zone); "-" for none."""
    if value is None or value == 0:
        return "-"
    seconds = value / 1000 if unit == "ms" else value
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


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
