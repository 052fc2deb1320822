"""The console's sessions as Flask sees them: the cookie carries a random id, the data is kept
in the store (:class:`gateway.store.console_sessions.ConsoleSessions`), shared by every replica.

Signing out deletes the session, so a copy of the cookie taken before is worth nothing after;
a session also ends :data:`SESSION_SECONDS` after it began, whatever the cookie says. The
cookie's flags: HttpOnly, SameSite=Strict, the console's path only, and Secure whenever the
request came over https.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from flask import Flask, Request, Response
from flask import request as current_request
from flask.sessions import SecureCookieSession, SessionInterface, session_json_serializer

from gateway.errors import TryAgainError
from gateway.store import ConsoleSessions

COOKIE_NAME = "mns_console"
COOKIE_PATH = "/console"
#: How long a session lasts once signed in: a working day.
SESSION_SECONDS = 12 * 3600
#: How long a session nobody signed in to lasts (the sign-in form's CSRF token): long enough to
#: type a key pair.
ANONYMOUS_SECONDS = 3600
#: What :func:`secrets.token_urlsafe` makes of 32 bytes; anything else is not looked up.
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{43}")


class ConsoleSession(SecureCookieSession):
    """The session's data, its id (``None`` until first saved) and whether the store could be
    read (an outage is raised by the console's guard, where it is answered as one)."""

    def __init__(
        self,
        data: dict[str, Any] | None = None,
        session_id: str | None = None,
        unavailable: TryAgainError | None = None,
    ) -> None:
        super().__init__(data or {})
        self.session_id = session_id
        self.unavailable = unavailable
        self.renew = False

    def renew_id(self) -> None:
        """Give the session a new id when it is next saved (at sign-in: an id somebody planted
        before is not the one that is signed in)."""
        self.renew = True
        self.modified = True


def _is_console(request: Request) -> bool:
    return request.path == COOKIE_PATH or request.path.startswith(COOKIE_PATH + "/")


def _came_over_https(request: Request) -> bool:
    """https to this server, or to the proxy in front when it says so."""
    forwarded = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    return request.is_secure or forwarded == "https"


class ConsoleSessionInterface(SessionInterface):
    """Sessions kept in ``sessions``; only requests under ``/console`` open one."""

    def __init__(self, sessions: ConsoleSessions) -> None:
        self.sessions = sessions

    def open_session(self, app: Flask, request: Request) -> ConsoleSession:
        if not _is_console(request):
            return ConsoleSession()
        session_id = request.cookies.get(COOKIE_NAME, "")
        if not _SESSION_ID.fullmatch(session_id):
            return ConsoleSession()
        try:
            data = self.sessions.load(session_id)
        except TryAgainError as error:  # raised from the guard, inside the request's handling
            return ConsoleSession(unavailable=error)
        if data is None:
            return ConsoleSession()
        return ConsoleSession(session_json_serializer.loads(data), session_id)

    def save_session(self, app: Flask, session: Any, response: Response) -> None:
        if not isinstance(session, ConsoleSession) or not session.modified:
            return
        if session.unavailable is not None:
            return
        if session.session_id is not None and (session.renew or not session):
            self.sessions.end(session.session_id)
            session.session_id = None
        if not session:
            response.delete_cookie(COOKIE_NAME, path=COOKIE_PATH, httponly=True, samesite="Strict")
            return
        if session.session_id is None:
            session.session_id = secrets.token_urlsafe(32)
        signed_in = "key_id" in session
        lifetime = SESSION_SECONDS if signed_in else ANONYMOUS_SECONDS
        try:
            # Flask's own serializer: a flashed message's markup (a link) comes back as markup.
            document = session_json_serializer.dumps(dict(session))
            self.sessions.save(session.session_id, document, lifetime, signed_in=signed_in)
        except TryAgainError as error:
            # Answered as the outage it is; the error page's own save is not tried again.
            session.unavailable = error
            raise
        response.set_cookie(
            COOKIE_NAME,
            session.session_id,
            path=COOKIE_PATH,
            httponly=True,
            samesite="Strict",
            secure=_came_over_https(current_request),
        )
        response.vary.add("Cookie")
