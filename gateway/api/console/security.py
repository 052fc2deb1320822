"""The console's protections, free of Flask: CSRF tokens, the checks on a key pair, where a
form may send the browser, and the response headers. The sign-in rate limit and the sessions
are kept in the store (:class:`gateway.store.sign_in.SignInAttempts`,
:mod:`gateway.api.console.sessions`), so replicas share them.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Collection, Mapping

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


#: A ``.`` or ``..`` path segment, as a browser reads one (``%2e`` is a dot to it).
_DOT_SEGMENT = re.compile(r"/(?:\.|%2e){1,2}(?:/|$)", re.IGNORECASE)


def console_target(target: str, fallback: str) -> str:
    """Where a ``next`` or ``back`` field may send the browser: a path of the console's own, as
    sent; anything else (another origin, ``//host``, a backslash browsers read as a slash, a
    ``..`` segment that climbs out of the console, a control character a Location header cannot
    carry) goes to ``fallback``."""
    if (
        target.startswith("/console/")
        and not target.startswith("//")
        and "\\" not in target
        and target.isprintable()
        and not _DOT_SEGMENT.search(target.partition("?")[0])
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


def secret_fingerprint(secret: str, key: str) -> str:
    """What the session keeps, server-side, of the secret it was opened with: enough to notice
    the secret was changed (the session then ends). An HMAC under the gateway's own session key,
    never sent to the browser."""
    return hmac.new(key.encode(), b"mns-console:" + secret.encode(), hashlib.sha256).hexdigest()


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
    key: str,
) -> bool:
    """A signed-in session stays valid while its key pair is still configured unchanged."""
    if not key_id or not fingerprint:
        return False
    secret = permanent.get(key_id)
    if secret is None or (admins and key_id not in admins):
        return False
    return hmac.compare_digest(secret_fingerprint(secret, key), fingerprint)
