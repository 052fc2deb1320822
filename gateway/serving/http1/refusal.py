"""Answering a request refused before the application saw it, with the application's own error.

A request the front refuses (malformed framing, a head too large or too slow, no room for the
connection) gets the same MNS ``<Error>`` document, request id and headers as any other error:
the front calls the application with an environ that carries the refusal under
:data:`~gateway.serving.http1.environ.REFUSAL`, and the application raises it before anything else
(:func:`gateway.api.app.create_app`). The answer always closes the connection: after a refusal,
nothing more on it can be trusted to be a request.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from email.utils import formatdate
from typing import Any

from gateway.errors.mns import MNSError
from gateway.serving.http1.environ import REFUSAL

StartResponse = Callable[..., object]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def refusal_environ(base: Mapping[str, Any], error: MNSError, method: str) -> dict[str, Any]:
    """An environ that names no resource and carries ``error``; ``method`` only decides
    whether the answer has a body (not for HEAD)."""
    return {
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "wsgi.url_scheme": "http",
        **base,
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": "/",
        "QUERY_STRING": "",
        "RAW_URI": "/",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "CONTENT_LENGTH": "0",
        "wsgi.input": io.BytesIO(),
        REFUSAL: error,
        **({"HTTP_X_MNS_VERSION": error.client_version} if error.client_version else {}),
    }


def refusal_response(
    app: WSGIApp, base: Mapping[str, Any], error: MNSError, method: str = "GET"
) -> tuple[int, bytes]:
    """The status and the bytes of the whole response the application gives ``error``."""
    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        answer["status"], answer["headers"] = status, headers

    result = app(refusal_environ(base, error, method), start_response)
    try:
        body = b"".join(result)
    finally:
        if (close := getattr(result, "close", None)) is not None:
            close()
    lines = [f"HTTP/1.1 {answer['status']}"]
    headers = [(name, value) for name, value in answer["headers"] if name.lower() != "connection"]
    lines += [f"{name}: {value}" for name, value in headers]
    lines += [f"Date: {formatdate(usegmt=True)}", "Connection: close"]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return int(answer["status"].split(" ", 1)[0]), head + body
