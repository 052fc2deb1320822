"""What the application reads of a WSGI environ beyond PEP 3333.

Two keys are the gateway's own, set by the server in front (:mod:`gateway.serving.http1`):
:data:`CLIENT_CONNECTED`, a callable telling whether the client is still connected, which a long
poll asks before it takes a message; and :data:`REFUSAL`, set only on the environ of a request
the front refused (:mod:`gateway.serving.http1.refusal`). They are defined here, on the side
that reads them, so the application imports nothing of the servers that run it.
"""

from __future__ import annotations

import io
from typing import Any, Final

from gateway.errors.mns import body_too_large

#: ``environ[CLIENT_CONNECTED]()`` is False once the client has closed its side; absent when the
#: server cannot tell (the application then assumes it is connected).
CLIENT_CONNECTED: Final = "mns.client_connected"
#: The :class:`~gateway.errors.mns.MNSError` a request was refused with, before it ran.
REFUSAL: Final = "mns.refusal"


def size_body(environ: dict[str, Any], limit: int) -> None:
    """Make a self-terminated body (chunked, as other servers stream it) a sized one.

    Read up to one byte past ``limit`` (raising the body-too-large error past it) and hand the
    bytes on with a Content-Length and no Transfer-Encoding, as the front does:
    werkzeug would cut a longer stream at the limit without a word, and would ignore a length
    while a Transfer-Encoding is still there. A body with a length is left alone.
    """
    if environ.get("CONTENT_LENGTH") or not environ.get("wsgi.input_terminated"):
        return
    data = environ["wsgi.input"].read(limit + 1)
    if len(data) > limit:
        raise body_too_large(limit)
    environ.update({"wsgi.input": io.BytesIO(data), "CONTENT_LENGTH": str(len(data))})
    environ.pop("wsgi.input_terminated")
    environ.pop("HTTP_TRANSFER_ENCODING", None)
