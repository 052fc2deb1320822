"""The console's protections, free of Flask where they can be: CSRF tokens, the checks on a key
pair, the response headers, and the session cookie's flags. The sign-in rate limit is kept in
the store (:class:`gateway.store.sign_in.SignInAttempts`), so replicas share it.

The session itself is Flask's signed cookie (itsdangerous, HMAC over the content); the key it is
signed with is kept in the store's shared settings so that every replica accepts every other's
cookies (:func:`gateway.api.console.install_console`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Collection, Mapping

from flask import Flask, Request
from flask.sessions import SecureCookieSessionInterface

#: The form field (and htmx header) carrying the CSRF token.
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"

#: No inline script or style anywhere; htmx is the one script and comes from our own origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def console_target(target: str, fallback: str) -> str:
    """Where a ``next`` or ``back`` field may send the browser: a path of the console's own, as
    sent; anything else (another origin, ``//host``, a backslash browsers read as a slash, a
    control character a Location header cannot carry) goes to ``fallback``."""
    if (
        target.startswith("/console/")
        and not target.startswith("//")
        and "\\" not in target
        and target.isprintable()
    ):
        return target
    return fallback


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


def csrf_matches(expected: str | None, given: str | None) -> bool:
    """Whether a submitted token is the session's; a session without one accepts nothing."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def secret_fingerprint(secret: str) -> str:
    """What the session keeps of the secret it was opened with: enough to notice the secret was
    changed (the session then ends), useless to anyone reading the cookie."""
    return hashlib.sha256(b"mns-console:" + secret.encode()).hexdigest()[:32]


def key_may_sign_in(
    key_id: str, secret: str, permanent: Mapping[str, str], admins: Collection[str]
) -> bool:
    """An access key pair the gateway accepts, and an admin one when admin keys are configured.

    Only permanent pairs: a temporary one needs its security token on every request, which a
    browser session would outlive.
    """
    known = permanent.get(key_id)
    if known is None or not hmac.compare_digest(known.encode(), secret.encode()):
        return False
    return not admins or key_id in admins


def session_still_valid(
    key_id: str | None,
    fingerprint: str | None,
    permanent: Mapping[str, str],
    admins: Collection[str],
) -> bool:
    """A signed-in session stays valid while its key pair is still configured unchanged."""
    if not key_id or not fingerprint:
        return False
    secret = permanent.get(key_id)
    if secret is None or (admins and key_id not in admins):
        return False
    return hmac.compare_digest(secret_fingerprint(secret), fingerprint)


class ConsoleSessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie session with the console's flags: HttpOnly, SameSite=Strict, the
    console's path only, and Secure whenever the request came over https."""

    def get_cookie_secure(self, app: Flask) -> bool:
        from flask import request

        return _came_over_https(request)

    def get_cookie_samesite(self, app: Flask) -> str:
        return "Strict"

    def get_cookie_httponly(self, app: Flask) -> bool:
        return True

    def get_cookie_name(self, app: Flask) -> str:
        return "mns_console"

    def get_cookie_path(self, app: Flask) -> str:
        return "/console"


def _came_over_https(request: Request) -> bool:
    """https to this server, or to the proxy in front when it says so."""
    forwarded = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    return request.is_secure or forwarded == "https"
