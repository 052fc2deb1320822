"""A framed request as a WSGI environ (PEP 3333): a sized body, and nothing left to frame.

The body arrives decoded and whole, so the environ says exactly that: ``CONTENT_LENGTH`` is its
length and ``Transfer-Encoding`` is gone, whatever the client framed it with. Headers whose
names hold an underscore are dropped, because WSGI spells ``X-A`` and ``X_A`` the same
(``HTTP_X_A``) and one must not pass for the other; repeated headers are joined with commas.

Two keys are the gateway's own (:mod:`gateway.api.environ`, where the application reads them):
:data:`CLIENT_CONNECTED`, a callable telling whether the client
is still connected, which a long poll asks before it takes a message; and :data:`REFUSAL`, set
only on the environ of a request the front refused (:mod:`gateway.serving.http1.refusal`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import unquote

# The keys are the application's; the front sets them (re-exported for the worker classes).
from gateway.api.environ import CLIENT_CONNECTED as CLIENT_CONNECTED
from gateway.api.environ import REFUSAL as REFUSAL
from gateway.api.environ import size_body as size_body
from gateway.serving.http1.framing import Request

#: Framing headers: the body is already decoded and sized, so they no longer describe it.
_FRAMING: Final = frozenset({"CONTENT_LENGTH", "TRANSFER_ENCODING"})


def request_environ(
    request: Request,
    base: Mapping[str, Any],
    client_address: tuple[str, int] | None,
    client_connected: Callable[[], bool],
) -> dict[str, Any]:
    """The environ for ``request``, on top of the server's ``base`` environ."""
    path, _, query = request.target.partition("?")
    environ = dict(base)
    environ.update(
        {
            "REQUEST_METHOD": request.method,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote(path, "latin-1"),
            "QUERY_STRING": query,
            "RAW_URI": request.target,
            "SERVER_PROTOCOL": request.version,
            "wsgi.input": io.BytesIO(request.body),
            "wsgi.input_terminated": True,
            CLIENT_CONNECTED: client_connected,
        }
    )
    if client_address is not None:
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = client_address[0], str(client_address[1])
    _add_headers(environ, request)
    return environ


def _add_headers(environ: dict[str, Any], request: Request) -> None:
    framed = False
    for name, value in request.headers:
        if "_" in name:
            continue
        key = name.upper().replace("-", "_")
        if key in _FRAMING:
            framed = True
            continue
        if key != "CONTENT_TYPE":
            key = f"HTTP_{key}"
        value = value.strip(" \t")
        if key in environ and key != "CONTENT_TYPE":
            separator = "; " if key == "HTTP_COOKIE" else ","
            environ[key] = f"{environ[key]}{separator}{value}"
        else:
            environ[key] = value
    if framed or request.body:
        environ["CONTENT_LENGTH"] = str(len(request.body))
