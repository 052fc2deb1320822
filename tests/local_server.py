"""An HTTP server on 127.0.0.1 in a thread of its own, for tests that stand in for an endpoint,
an API or a certificate host."""

from __future__ import annotations

import http.server
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: How long stopping waits for the server's thread.
STOP_SECONDS = 10.0


@contextmanager
def local_server(
    handler: type[http.server.BaseHTTPRequestHandler],
    *,
    port: int = 0,
    tls: ssl.SSLContext | None = None,
) -> Iterator[str]:
    """Serve ``handler`` (a thread per request) until the block ends; yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    scheme = "http"
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    # A short poll interval keeps shutdown() (which waits for the next poll) fast.
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(STOP_SECONDS)
